package bus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRetryOfALongIDEndingInAnAttempt: a call whose id is as long as an
// id may be and ends like the id of its second attempt ("-r2") is sent
// again under an id of its own after its first attempt was lost: the
// cancel of the lost attempt leaves the next alone, and the final kept is
// the second attempt's.
func TestRetryOfALongIDEndingInAnAttempt(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("lookup", "Look it up.", func(ctx context.Context, in struct{}) (string, error) { return "found", nil }), toolkit.ReadOnly())
	nc := natstest.Connect(t, s)
	serve(t, nc, tk, &bus.WorkerOptions{Results: &bus.ResultsOptions{JetStream: natstest.JS(t, nc)}})
	taken := hole(t, natstest.Connect(t, s), "lookup", nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat})
	for i := 0; ; i++ { // the queue group picks at random: until the hole took one
		head := fmt.Sprint("k", i, "-")
		id := head + strings.Repeat("x", wire.MaxCallIDLen-len(head)-3) + "-r2"
		r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: id, Name: "lookup", KeepResult: true})
		select {
		case <-taken:
		default:
			if i < 100 {
				continue
			}
			t.Fatal("the silent worker never got a call")
		}
		if r.ID != id || r.Text() != "found" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
			t.Fatalf("the call: %s %s %q after %v attempts", r.ID, r.Code, r.Text(), r.Metadata[wire.MetaAttempts])
		}
		if r := c.Result(ctxT(t), id); r.ID != id || r.Text() != "found" || r.State != toolkit.StateSuccess {
			t.Fatalf("kept result: %s %q", r.Code, r.Text())
		}
		return
	}
}
