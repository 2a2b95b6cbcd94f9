package bus

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// Client.Cancel(id) in the moment between an attempt's retryable final
// and the client's decision to send the call again found the call neither
// pending nor retrying: the cancel went nowhere and the call was sent
// again and ran.
func TestCancelBetweenAttempts(t *testing.T) {
	s := natstest.Server(t)
	var runs atomic.Int32
	tk := toolkit.New(nil)
	mustAddT(t, tk, toolkit.Func("probe", "Answers at once.", func(context.Context, struct{}) (string, error) {
		runs.Add(1)
		return "ran", nil
	}), toolkit.ReadOnly())

	// The first attempt goes to a subscriber that never answers (a lost
	// worker); the real worker comes up once it took it.
	hnc := natstest.Conn(t, s)
	taken := make(chan struct{})
	var once sync.Once
	hole, err := hnc.QueueSubscribe(wire.CallSubject("probe", ""), DefaultQueue, func(*nats.Msg) { once.Do(func() { close(taken) }) })
	if err != nil {
		t.Fatal(err)
	}
	hnc.Flush()
	up := make(chan struct{})
	go func() {
		defer close(up)
		<-taken
		hole.Unsubscribe()
		hnc.Flush()
		serveKV(t, s, tk, nil)
	}()
	c, err := NewClient(natstest.Conn(t, s), &ClientOptions{Heartbeat: MinHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.afterRun = func(id string) {
		if id == "job-1" {
			// The real worker is up: a second attempt sent would run.
			<-up
			if err := c.Cancel("job-1"); err != nil {
				t.Error(err)
			}
		}
	}
	r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "job-1", Name: "probe"})
	if r.Code != toolkit.CodeInterrupted || r.ID != "job-1" || runs.Load() != 0 {
		t.Fatalf("final %s %s %q after Cancel(job-1) between attempts, tool ran %d times; want interrupted and no run", r.ID, r.Code, r.Text(), runs.Load())
	}
}
