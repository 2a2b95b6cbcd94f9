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
	// The worker stays announced but takes no call; the first attempt goes
	// to a subscriber that never answers and leaves with it (a lost worker).
	_, c := lostProbe(t, s, tk, &ClientOptions{Heartbeat: MinHeartbeat})
	hnc := natstest.Conn(t, s)
	var taken atomic.Int32
	var hole *nats.Subscription
	hole, err := hnc.QueueSubscribe(wire.CallSubject("probe", ""), DefaultQueue, func(*nats.Msg) {
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
