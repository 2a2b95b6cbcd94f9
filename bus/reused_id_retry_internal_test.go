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

// TestCancelReusedIDBetweenAttempts: two calls of one id are in flight;
// both lose their first attempt. While the first waits to be sent again,
// the second ends, and then Cancel(id) comes: the first must not be sent
// again. The second's end forgot that the id may be sent again, so the
// cancel found the first call neither pending nor retrying and it was
// sent again after it.
func TestCancelReusedIDBetweenAttempts(t *testing.T) {
	s := natstest.Server(t)
	tk := toolkit.New(nil)
	mustAddT(t, tk, toolkit.Func("probe", "Answers at once.", func(context.Context, struct{}) (string, error) {
		return "ran", nil
	}), toolkit.ReadOnly())
	// The worker stays announced but takes no call: every attempt goes to
	// a subscriber that never answers (a lost worker).
	_, c := lostProbe(t, s, tk, &ClientOptions{Heartbeat: MinHeartbeat, MaxAttempts: 2})
	hnc := natstest.Conn(t, s)
	var taken atomic.Int32
	if _, err := hnc.QueueSubscribe(wire.CallSubject("probe", ""), DefaultQueue, func(*nats.Msg) { taken.Add(1) }); err != nil {
		t.Fatal(err)
	}
	hnc.Flush()

	var runs atomic.Int32
	firstHeld, release := make(chan struct{}), make(chan struct{})
	c.afterRun = func(id string) {
		if id == "job" && runs.Add(1) == 1 {
			close(firstHeld) // the first call, between its attempts
			<-release
		}
	}
	first := make(chan *toolkit.Response, 1)
	go func() { first <- c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "job", Name: "probe"}) }()
	<-firstHeld
	// The second call of the id: lost twice, it ends worker_lost.
	if r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "job", Name: "probe"}); r.Code != toolkit.CodeWorkerLost {
		t.Fatalf("the second call: %s %q", r.Code, r.Text())
	}
	if err := c.Cancel("job"); err != nil {
		t.Fatal(err)
	}
	sent := taken.Load() // the first's attempt and the second's two
	close(release)
	r := <-first
	if r.Code != toolkit.CodeInterrupted || taken.Load() != sent {
		t.Fatalf("the first call, cancelled between its attempts: %s %q; %d attempts sent after the cancel", r.Code, r.Text(), taken.Load()-sent)
	}
}
