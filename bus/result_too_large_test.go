package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKeptResultOverMaxPayload: a final larger than the server's
// max_payload reaches its caller (split into chunks) but cannot be kept
// (a KV value is one message): what is kept instead says so, and how the
// call ended (it answered not_found, as if the call had kept nothing).
// The worker's line said only that it "could not keep a call's result";
// it now says why and what the caller will see.
func TestKeptResultOverMaxPayload(t *testing.T) {
	s := natstest.Embedded(t, false)
	big := strings.Repeat("x", 2<<20) // over the default max_payload, 1 MiB
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("big", "Answer 2 MiB.", func(context.Context, struct{}) (string, error) { return big, nil }))
	var logs natstest.Buffer
	nc := natstest.Connect(t, s)
	serve(t, nc, tk, &bus.WorkerOptions{Instance: "keeper", Results: &bus.ResultsOptions{JetStream: natstest.JS(t, nc)},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "big1", Name: "big", KeepResult: true}); r.Text() != big {
		t.Fatalf("the call: %s %s, %d bytes", r.State, r.Code, len(r.Text()))
	}
	if r := c.Result(ctxT(t), "big1"); r.Code != toolkit.CodeInternal || !strings.Contains(r.Text(), "ResultTooLargeError: call 'big1' ended success") {
		t.Fatalf("the result of a final over max_payload: %s %s %.200q", r.State, r.Code, r.Text())
	}
	line := logs.String()
	for _, want := range []string{"could not keep a call's result", "call=big1", "max_payload", "ResultTooLargeError"} {
		if !strings.Contains(line, want) {
			t.Errorf("the worker's line lacks %q:\n%s", want, line)
		}
	}
}
