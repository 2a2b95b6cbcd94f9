package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCancelOfEndedCallSparesReusedID: a caller's cancel that reached
// the workers after its call had ended there (the cancel raced the
// final, or the call's worker was lost) left a tombstone on every worker
// for 30 s, and the next call under the same id, from any caller, was
// answered interrupted without running. A call id may be used again once
// its call has ended (README: Guarantees); the cancel names the call it
// is for by its reply subject, and spares another one.
func TestCancelOfEndedCallSparesReusedID(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	taken := hole(t, nc, "echo", nil) // takes the first call and never answers
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxAttempts: 1, CancelGrace: 100 * time.Millisecond})
	ctx, cancel := context.WithCancel(ctxT(t))
	first := make(chan *toolkit.Response, 1)
	go func() {
		first <- c.Invoke(ctx, toolkit.ToolCall{ID: "again", Name: "echo", Input: map[string]any{"text": "one"}})
	}()
	<-taken
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	mustAdd(t, tk, goneTool("block", 0, make(chan error, 1)))
	w := serve(t, natstest.Connect(t, s), tk, nil) // hears the first call's cancel, never the call
	// A call of the worker's, cancelled after the first: once it has
	// ended, the worker has handled the first call's cancel too (one
	// connection sent both, and one subscription takes them in order).
	marker := make(chan *toolkit.Response, 1)
	go func() {
		marker <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "marker", Name: "block", Input: map[string]any{}})
	}()
	natstest.WaitFor(t, "the marker call to run", func() bool { return w.InFlight() == 1 })
	cancel()
	if r := <-first; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("first call: %s %s %q", r.State, r.Code, r.Text())
	}
	if err := c.Cancel("marker"); err != nil {
		t.Fatal(err)
	}
	if r := <-marker; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("marker call: %s %s %q", r.State, r.Code, r.Text())
	}
	r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "again", Name: "echo", Input: map[string]any{"text": "two"}})
	if r.State != toolkit.StateSuccess || r.Text() != "two" {
		t.Fatalf("the id used again: %s %s %q, want it run", r.State, r.Code, r.Text())
	}
}
