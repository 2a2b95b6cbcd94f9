package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestToolErrorOfUnknownCode: a tool that fails with a *toolkit.Error
// whose code is not one of the closed set (a code made from an upstream
// status, say) had its final sent with that code, which the wire
// refuses: the caller dropped the final as undecodable and waited until
// its stall timeout called the worker lost ("may or may not have taken
// effect"), while the worker's calls metric counted the call under the
// made-up code, one label value per code a tool made up. Such a failure
// ends tool_error, with the tool's message.
func TestToolErrorOfUnknownCode(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("upstream", "Fails with a code of its own.", func(ctx context.Context, in struct{}) (string, error) {
		return "", &toolkit.Error{Code: toolkit.Code(fmt.Sprint("http_", 503)), Message: "the upstream answered 503"}
	}))
	var mu sync.Mutex
	var counted []toolkit.Code
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{OnFinal: func(_ string, _ toolkit.State, code toolkit.Code, _ time.Duration) {
		mu.Lock()
		counted = append(counted, code)
		mu.Unlock()
	}})
	c := newClient(t, natstest.Connect(t, s), nil)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "upstream"})
	if r.State != toolkit.StateError || r.Code != toolkit.CodeToolError || r.Text() != "the upstream answered 503" {
		t.Errorf("the call: %s %s %q, want error tool_error with the tool's message", r.State, r.Code, r.Text())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(counted) != 1 || counted[0] != toolkit.CodeToolError {
		t.Errorf("OnFinal heard %q, want tool_error once", counted)
	}
}
