package bus

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestLostThenUnservedStaysLost: a read-only call's worker is lost with
// it, and the call sent again finds no worker serving the tool (no
// responders). The second attempt says nothing of the first, which may
// have run: the call ends worker_lost, not unavailable saying no worker
// serves the tool (which reads as "not run").
func TestLostThenUnservedStaysLost(t *testing.T) {
	s := natstest.Server(t)
	tk := toolkit.New(nil)
	mustAddT(t, tk, toolkit.Func("probe", "Answers at once.", func(context.Context, struct{}) (string, error) {
		return "ran", nil
	}), toolkit.ReadOnly())
	w := serveKV(t, s, tk, nil)
	c, err := NewClient(natstest.Conn(t, s), &ClientOptions{Heartbeat: MinHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	natstest.WaitFor(t, "the fleet to list probe", func() bool {
		f, err := c.Fleet(t.Context())
		if err != nil {
			return false
		}
		_, ok := f.Tool("probe")
		return ok
	})

	// The worker stays announced but takes no call; the first attempt goes
	// to a subscriber that never answers and leaves with it (a lost worker).
	w.mu.Lock()
	for _, sub := range w.subs["probe"] {
		if sub != nil {
			sub.Unsubscribe()
		}
	}
	w.mu.Unlock()
	hnc := natstest.Conn(t, s)
	var taken atomic.Int32
	var hole *nats.Subscription
	hole, err = hnc.QueueSubscribe(wire.CallSubject("probe", ""), DefaultQueue, func(*nats.Msg) {
		taken.Add(1)
		hole.Unsubscribe()
	})
	if err != nil {
		t.Fatal(err)
	}
	hnc.Flush()

	r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "job", Name: "probe"})
	if r.Code != toolkit.CodeWorkerLost || r.ID != "job" || taken.Load() != 1 {
		t.Fatalf("final %s %s %q (attempts %v); want worker_lost: the lost attempt may have run", r.ID, r.Code, r.Text(), r.Metadata[wire.MetaAttempts])
	}
}
