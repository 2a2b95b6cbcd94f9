package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableAbandonedAtStopHandedBack: a stopping worker interrupts a
// durable call of an idempotent tool at the end of its grace, and the
// tool ignores its context. The call is not answered interrupted once
// the worker abandons the tool: it is handed back to the queue, as a
// call whose tool returned would be, and the next worker's result is
// what its caller gets.
func TestDurableAbandonedAtStopHandedBack(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int32
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	newTK := func(hang bool) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("sync", "Sync the mirror.", func(ctx context.Context, in struct{}) (string, error) {
			runs.Add(1)
			started <- struct{}{}
			if hang {
				<-release // deaf to its context
			}
			return "synced", nil
		}), toolkit.WithIdempotency(toolkit.Idempotent))
		return tk
	}
	w1, _ := keepingWorker(t, s, newTK(true), bus.WorkerOptions{Instance: "leaving", AbandonAfter: 50 * time.Millisecond}, 0)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "ab2", Name: "sync", Durable: true}) }()
	<-started
	grace, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w1.Stop(grace) // returns once the tool is abandoned
	keepingWorker(t, s, newTK(false), bus.WorkerOptions{Instance: "next"}, 0)
	r := <-done
	if r.Text() != "synced" || runs.Load() != 2 {
		t.Fatalf("an abandoned call of a stopping worker ended %s %q for its caller (runs: %d)", r.Code, r.Text(), runs.Load())
	}
}
