package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSilentDurableCallIgnoresAnotherCallsKeptFinal: a durable call that
// falls silent looks for its kept final, under its id. Another call's
// final kept under that id (a core call's, or an earlier durable call's
// past the queue's duplicates window: ids may be reused, and a final is
// kept for an hour) was taken for it, so a call that never ran ended with
// another call's output. A kept final names the reply subject of the
// call that kept it, and a silent durable call takes only its own (or
// one naming none, kept by an earlier build).
func TestSilentDurableCallIgnoresAnotherCallsKeptFinal(t *testing.T) {
	s := natstest.Embedded(t, true)
	tk := toolkit.New(nil)
	mustAdd(t, tk, chargeTool(nil, nil))
	w, _ := keepingWorker(t, s, tk, bus.WorkerOptions{}, 30*time.Second)
	// The earlier call answers: its client's stall timeout is long, so a
	// busy machine holding its worker off the CPU does not end it lost.
	// The silent call's, short, only decides how soon it is looked at.
	earlier := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat, StallTimeout: guard})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat, StallTimeout: 300 * time.Millisecond})
	ctx := ctxT(t)
	if r := earlier.Invoke(ctx, toolkit.ToolCall{ID: "pay1", Name: "charge", KeepResult: true}); r.Text() != "charged" {
		t.Fatalf("the earlier call: %s %s %q", r.State, r.Code, r.Text())
	}
	stop, cancel := context.WithTimeout(ctx, guard)
	defer cancel()
	if err := w.Stop(stop); err != nil {
		t.Fatal(err)
	}
	// No worker takes it: it waits in the queue, and falls silent.
	callCtx, cancelCall := context.WithTimeout(ctx, 20*time.Second)
	defer cancelCall()
	r := c.Invoke(callCtx, toolkit.ToolCall{ID: "pay1", Name: "charge", Durable: true})
	if r.Text() == "charged" || r.State == toolkit.StateSuccess {
		t.Fatalf("a durable call no worker took ended %s with %q: the earlier call's kept final under its id", r.State, r.Text())
	}
}
