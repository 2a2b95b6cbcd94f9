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

// TestCancelSparesLaterCallOfTheID: two calls of one id lose their first
// attempt and wait to be sent again when Cancel(id) comes; then a third
// call of the id starts, loses its first attempt too, and the tool's
// worker is back. The cancel stops the two calls it found, neither sent
// again; the third, started after it, is sent again and runs. All calls
// of an id shared one stop, which the cancel had closed: the third ended
// interrupted, "cancelled before it was sent again", without being sent
// again, though no cancel was for it.
func TestCancelSparesLaterCallOfTheID(t *testing.T) {
	s := natstest.Server(t)
	var runs atomic.Int32
	tk := toolkit.New(nil)
	mustAddT(t, tk, toolkit.Func("probe", "Answers at once.", func(context.Context, struct{}) (string, error) {
		runs.Add(1)
		return "ran", nil
	}), toolkit.ReadOnly())
	// The worker stays announced but takes no call: the attempts go to a
	// subscriber that never answers (a lost worker) until it leaves.
	_, c := lostProbe(t, s, tk, &ClientOptions{Heartbeat: MinHeartbeat, MaxAttempts: 2})
	hnc := natstest.Conn(t, s)
	var taken atomic.Int32
	hole, err := hnc.QueueSubscribe(wire.CallSubject("probe", ""), DefaultQueue, func(*nats.Msg) { taken.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	hnc.Flush()

	// The first two calls are held between their attempts; the third's
	// lost attempt waits for the tool's worker to be back.
	var ended atomic.Int32
	held, release, up := make(chan struct{}, 2), make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	c.afterRun = func(id string) {
		if id != "job" {
			return
		}
		if ended.Add(1) <= 2 {
			held <- struct{}{}
			<-release
		} else {
			<-up
		}
	}
	earlier := make(chan *toolkit.Response, 2)
	for range 2 {
		go func() { earlier <- c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "job", Name: "probe"}) }()
	}
	<-held
	<-held
	if err := c.Cancel("job"); err != nil {
		t.Fatal(err)
	}

	later := make(chan *toolkit.Response, 1)
	go func() { later <- c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "job", Name: "probe"}) }()
	natstest.WaitFor(t, "the later call's first attempt to be taken", func() bool { return taken.Load() == 3 })
	hole.Unsubscribe()
	hnc.Flush()
	serveKV(t, s, tk, nil) // hears no cancel of the id: a call sent to it runs
	close(up)
	r := <-later
	if r.State != toolkit.StateSuccess || r.Text() != "ran" || r.ID != "job" {
		t.Fatalf("the call started after Cancel(job): %s %s %q, want it sent again and run", r.State, r.Code, r.Text())
	}

	releaseOnce.Do(func() { close(release) })
	for range 2 {
		if r := <-earlier; r.Code != toolkit.CodeInterrupted || r.ID != "job" {
			t.Fatalf("a call cancelled between its attempts: %s %s %q, want interrupted", r.ID, r.Code, r.Text())
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once (the later call): a cancelled call was sent again", n)
	}
}
