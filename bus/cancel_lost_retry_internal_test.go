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

// TestCancelLostRetryNotResent: a call sent again after worker_lost is
// lost again, and its caller cancels it while the fleet no longer has its
// tool: the attempt would not have been sent again, and the tool may have
// run, so the call ends worker_lost, as a first attempt does (not
// interrupted "before it was sent again").
func TestCancelLostRetryNotResent(t *testing.T) {
	s := natstest.Server(t)
	tk := toolkit.New(nil)
	mustAddT(t, tk, toolkit.Func("probe", "Answers at once.", func(context.Context, struct{}) (string, error) {
		return "ran", nil
	}), toolkit.ReadOnly())
	// The worker stays announced but takes no call: every attempt goes to
	// a subscriber that never answers (a lost worker).
	w, c := lostProbe(t, s, tk, &ClientOptions{Heartbeat: MinHeartbeat})
	hnc := natstest.Conn(t, s)
	var taken atomic.Int32
	if _, err := hnc.QueueSubscribe(wire.CallSubject("probe", ""), DefaultQueue, func(*nats.Msg) { taken.Add(1) }); err != nil {
		t.Fatal(err)
	}
	hnc.Flush()

	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "job", Name: "probe"}) }()
	natstest.WaitFor(t, "the second attempt", func() bool { return taken.Load() == 2 })
	w.Stop(context.Background())
	natstest.WaitFor(t, "the fleet to drop probe", func() bool {
		f, err := c.Fleet(t.Context())
		if err != nil {
			return false
		}
		_, ok := f.Tool("probe")
		return !ok
	})
	if err := c.Cancel("job"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Code != toolkit.CodeWorkerLost || r.ID != "job" || taken.Load() != 2 {
		t.Fatalf("final %s %s %q after %d attempts; want worker_lost after 2", r.ID, r.Code, r.Text(), taken.Load())
	}
}
