package bus_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// gatedJetStream is a server's JetStream whose binding of the cancels
// stream waits for open (or its context): a bind still under way.
type gatedJetStream struct {
	jetstream.JetStream
	open   chan struct{}
	asked  chan struct{} // closed when the cancels stream is first asked for
	askedO sync.Once
}

func (g *gatedJetStream) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if name == wire.StreamCancels {
		g.askedO.Do(func() { close(g.asked) })
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.JetStream.Stream(ctx, name)
}

// TestDurableCancelRecordedBeforeBind: a durable call cancelled while it
// waited in the queue, before the worker that takes it heard cancels, is
// not run when the worker takes it while its cancels stream is still
// being bound: the call waits for the bind and looks its cancel up.
func TestDurableCancelRecordedBeforeBind(t *testing.T) {
	s := natstest.Embedded(t, false)
	var ran atomic.Int32
	kit := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("effect", "Has an effect.", func(ctx context.Context, in struct{}) (string, error) {
			ran.Add(1)
			return "done", nil
		}))
		return tk
	}
	// A worker made the streams and the tool's consumer, and left.
	w0, _ := startDurableWorker(t, s, kit(), bus.WorkerOptions{Instance: "w0"}, 0, true)
	stopCtx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	w0.Stop(stopCtx)

	c := newClient(t, natstest.Connect(t, s), nil)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "queued", Name: "effect", Durable: true}) }()
	js := natstest.JS(t, natstest.Connect(t, s))
	natstest.WaitFor(t, "the call queued", func() bool {
		st, err := js.Stream(ctxT(t), wire.StreamCalls)
		return err == nil && st.CachedInfo().State.Msgs == 1
	})
	if err := newClient(t, natstest.Connect(t, s), nil).Cancel("queued"); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the cancel recorded", func() bool {
		st, err := js.Stream(ctxT(t), wire.StreamCancels)
		return err == nil && st.CachedInfo().State.Msgs == 1
	})

	// The next worker's bind of the cancels stream waits until the call
	// was delivered to it.
	nc := natstest.Connect(t, s)
	gated := &gatedJetStream{JetStream: natstest.JS(t, nc), open: make(chan struct{}), asked: make(chan struct{})}
	served := make(chan *bus.Worker, 1)
	go func() {
		w, err := bus.Serve(nc, kit(), &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: gated}})
		if err != nil {
			t.Error(err)
		}
		served <- w
	}()
	<-gated.asked
	cons, err := js.Consumer(ctxT(t), wire.StreamCalls, "effect")
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call delivered while the cancels stream is bound", func() bool {
		info, err := cons.Info(ctxT(t))
		return err == nil && info.Delivered.Consumer >= 1
	})
	close(gated.open)
	w1 := <-served
	if w1 == nil {
		t.FailNow()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		w1.Stop(ctx)
	})
	if r := <-done; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("the call cancelled while queued: %s %s", r.Code, r.Text())
	}
	if n := ran.Load(); n != 0 {
		t.Fatalf("the tool ran %d times, want none", n)
	}
}
