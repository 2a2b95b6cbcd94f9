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

// TestDurableFrozenWorkerThaws: the worker running a durable call of a
// tool that may not run again is cut off (frozen: its subscriptions stay
// on the server) past AckWait. The next delivery is answered worker_lost
// without running, and the caller ends there. The frozen worker then
// comes back and its tool ends: the caller has had its one final, and
// the kept final stays the one it got.
func TestDurableFrozenWorkerThaws(t *testing.T) {
	s := natstest.Embedded(t, true)
	started := make(chan struct{}, 4)
	release := make(chan struct{})
	newTK := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("charge", "Charges a card.", func(ctx context.Context, in struct{}) (string, error) {
			started <- struct{}{}
			<-release
			return "charged", nil
		}))
		return tk
	}
	var lost, ran atomic.Int32
	onFinal := func(tool string, st toolkit.State, code toolkit.Code, took time.Duration) {
		switch code {
		case toolkit.CodeWorkerLost:
			lost.Add(1)
		case "":
			ran.Add(1)
		}
	}
	const ackWait = time.Second
	// The first worker, through a proxy that freezes its link.
	p := natstest.ProxyTo(t, s)
	nc1 := p.Conn(t)
	js1 := natstest.JS(t, nc1)
	serve(t, nc1, newTK(), &bus.WorkerOptions{Instance: "frozen", OnFinal: onFinal,
		Durable: &bus.DurableOptions{JetStream: js1, AckWait: ackWait}, Results: &bus.ResultsOptions{JetStream: js1}})

	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	finals := make(chan *toolkit.Response, 4)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for ev := range c.Call(ctx, toolkit.ToolCall{ID: "pay1", Name: "charge", Durable: true}) {
			if ev.Final != nil {
				finals <- ev.Final
			}
		}
	}()
	<-started
	p.Pause()
	keepingWorker(t, s, newTK(), bus.WorkerOptions{Instance: "heir", OnFinal: onFinal}, ackWait)
	natstest.WaitFor(t, "the heir to answer the redelivery", func() bool { return lost.Load() == 1 })
	<-ended
	if len(finals) != 1 {
		t.Fatalf("the caller got %d finals", len(finals))
	}
	got := <-finals
	if got.Code != toolkit.CodeWorkerLost {
		t.Fatalf("the caller got %s (%s): want the heir's worker_lost", got.Code, got.Text())
	}
	// The frozen worker comes back; its tool ends.
	close(release)
	p.Resume()
	natstest.WaitFor(t, "the thawed worker to end its call", func() bool { return ran.Load() == 1 })
	nc1.Flush()
	if kept := c.Result(ctxT(t), "pay1"); kept.Code != got.Code {
		t.Fatalf("kept %s (%q), the caller got %s", kept.Code, kept.Text(), got.Code)
	}
}
