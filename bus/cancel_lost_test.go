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

// Cancel(id) while the first attempt is in flight on a worker that is
// then lost (its cancel reaches nobody) was forgotten: the attempt ended
// worker_lost, the client sent the call again, and it ran to its end.
func TestCancelDuringLostFirstAttempt(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int64
	started := make(chan struct{}, 4)
	// A tool that runs for d unless cancelled.
	slow := func(d time.Duration) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw("slow", "Slow.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			runs.Add(1)
			started <- struct{}{}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
				return w.Write(toolkit.Text("finished"))
			}
		}), toolkit.ReadOnly())
		return tk
	}
	ncA := natstest.Connect(t, s)
	serve(t, ncA, slow(2*time.Second), nil) // its run ends unheard: its worker is lost
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond, StallTimeout: 400 * time.Millisecond})
	if _, err := c.Fleet(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "job-l", Name: "slow"}) }()
	<-started
	// Worker B, for the retry: a run there that a cancel does not reach
	// finishes, however long the cancel takes.
	serve(t, natstest.Connect(t, s), slow(guard), nil)
	ncA.Close() // worker A is lost mid-call
	if err := c.Cancel("job-l"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Code != toolkit.CodeInterrupted || r.ID != "job-l" {
		t.Fatalf("final %s %q %q after Cancel during the first attempt, want interrupted; the tool ran %d times", r.ID, r.Code, r.Text(), runs.Load())
	}
}
