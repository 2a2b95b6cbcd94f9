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

// TestDurableCancelWhileWorkerCutOff: a durable call is queued and
// cancelled while the only worker is cut off from NATS (its node down,
// its link broken): the cancel goes by unheard. Back, the worker takes
// the call from the queue and answers it interrupted without running it,
// as the cancels stream says; it ran the tool after its caller was told
// "interrupted".
func TestDurableCancelWhileWorkerCutOff(t *testing.T) {
	s := natstest.Embedded(t, true)
	var ran atomic.Int32
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("charge", "Charges a card.", func(ctx context.Context, in struct{}) (string, error) {
		ran.Add(1)
		return "charged", nil
	}))
	px := natstest.ProxyTo(t, s)
	wnc := px.Conn(t)
	wjs := natstest.JS(t, wnc)
	serve(t, wnc, tk, &bus.WorkerOptions{Instance: "w1",
		Durable: &bus.DurableOptions{JetStream: wjs}, Results: &bus.ResultsOptions{JetStream: wjs}})

	px.Cut()
	natstest.WaitFor(t, "the worker to be cut off", func() bool { return !wnc.IsConnected() })
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{CancelGrace: 100 * time.Millisecond})
	js := natstest.JS(t, natstest.Connect(t, s))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{ID: "pay1", Name: "charge", Durable: true}) }()
	natstest.WaitFor(t, "the call queued", func() bool {
		st, err := js.Stream(ctxT(t), "toolbus_calls")
		return err == nil && st.CachedInfo().State.Msgs == 1
	})
	cancel()
	if r := <-done; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("the call cancelled while queued: %+v", r)
	}
	natstest.WaitFor(t, "the cancel recorded", func() bool {
		st, err := js.Stream(ctxT(t), "toolbus_cancels")
		return err == nil && st.CachedInfo().State.Msgs == 1
	})

	px.Restore()
	natstest.WaitFor(t, "the worker to take the call", func() bool {
		st, err := js.Stream(ctxT(t), "toolbus_calls")
		return err == nil && st.CachedInfo().State.Msgs == 0
	})
	if n := ran.Load(); n != 0 {
		t.Fatalf("the tool ran %d times after its call was cancelled, want none", n)
	}
	natstest.WaitFor(t, "the kept final", func() bool { return c.Result(ctxT(t), "pay1").Code != toolkit.CodeNotFound })
	if r := c.Result(ctxT(t), "pay1"); r.Code != toolkit.CodeInterrupted {
		t.Fatalf("kept result: %s %q, want interrupted", r.Code, r.Text())
	}
}
