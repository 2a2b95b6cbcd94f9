package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableUnkeptLastDeliveryNotLost: the last delivery of a durable
// call answers, its caller gets the answer, but the results bucket takes
// no write at that moment (here: its stream hears none, its subjects
// moved aside), so the final is not kept. The call was left
// unacknowledged, to be delivered again; on its last delivery that meant
// it ran out of deliveries, and was ended worker_lost, which was kept: a
// caller reading the kept result got worker_lost for a call that
// succeeded. The final is written again until the bucket takes it, and
// the call acknowledged then: the kept result is the call's answer.
func TestDurableUnkeptLastDeliveryNotLost(t *testing.T) {
	s := natstest.Embedded(t, true)
	ackWait := 2 * time.Second
	ctx := ctxT(t)
	tnc := natstest.Connect(t, s)
	js := natstest.JS(t, tnc)
	ran := make(chan struct{}, 1)
	release := make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("store", "Store a value.", func(context.Context, struct{}) (string, error) {
		ran <- struct{}{}
		<-release
		// Half its AckWait or longer: its final is kept before it is
		// sent (the queue may have delivered it again).
		time.Sleep(ackWait/2 + 100*time.Millisecond)
		return "stored", nil
	}), toolkit.WithIdempotency(toolkit.Idempotent))
	keepingWorker(t, s, tk, bus.WorkerOptions{Instance: "keeper", Durable: &bus.DurableOptions{MaxDeliver: 1}}, ackWait)
	c := newClient(t, natstest.Connect(t, s), nil)

	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{ID: "unkept-1", Name: "store", Durable: true}) }()
	<-ran
	stream, err := js.Stream(ctx, "KV_"+wire.BucketResults)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	heard := cfg.Subjects
	cfg.Subjects = []string{"$KV." + wire.BucketResults + ".deaf"}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	close(release)
	if r := <-done; r.Code != "" || r.Text() != "stored" {
		t.Fatalf("the call: %s %q; want its answer", r.Code, r.Text())
	}
	cfg.Subjects = heard
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	calls, err := js.Stream(ctx, wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call to leave the calls stream", func() bool {
		info, err := calls.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	var r *toolkit.Response
	natstest.WaitFor(t, "a kept result", func() bool {
		r = c.Result(ctx, "unkept-1")
		return r.Code != toolkit.CodeNotFound
	})
	if r.Code != "" || r.Text() != "stored" {
		t.Fatalf("the kept result: %s %q; want the answer its caller got", r.Code, r.Text())
	}
}

// TestDurableUnkeptLastDeliveryStopped: a quick durable call answers on
// its last delivery while the results bucket takes no write, and its
// worker stops; the stop's grace over, the final's write was given up
// and the call left unacknowledged, to be delivered again, which its
// last delivery is not: the next worker ended it worker_lost and kept
// that, though its caller got its answer. It is acknowledged: nothing
// is kept, and no worker_lost.
func TestDurableUnkeptLastDeliveryStopped(t *testing.T) {
	s := natstest.Embedded(t, true)
	ackWait := time.Second
	ctx := ctxT(t)
	tnc := natstest.Connect(t, s)
	js := natstest.JS(t, tnc)
	newTK := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("mark", "Mark a value.", func(context.Context, struct{}) (string, error) {
			return "marked", nil
		}), toolkit.WithIdempotency(toolkit.Idempotent))
		return tk
	}
	w1, _ := keepingWorker(t, s, newTK(), bus.WorkerOptions{Instance: "first", Durable: &bus.DurableOptions{MaxDeliver: 1}}, ackWait)
	c := newClient(t, natstest.Connect(t, s), nil)

	stream, err := js.Stream(ctx, "KV_"+wire.BucketResults)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	heard := cfg.Subjects
	cfg.Subjects = []string{"$KV." + wire.BucketResults + ".deaf"}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "unkept-2", Name: "mark", Durable: true}); r.Code != "" || r.Text() != "marked" {
		t.Fatalf("the call: %s %q; want its answer", r.Code, r.Text())
	}
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	w1.Stop(sctx)
	cancel()
	cfg.Subjects = heard
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	keepingWorker(t, s, newTK(), bus.WorkerOptions{Instance: "second", Durable: &bus.DurableOptions{MaxDeliver: 1}}, ackWait)
	calls, err := js.Stream(ctx, wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call to leave the calls stream", func() bool {
		info, err := calls.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
	if r := c.Result(ctx, "unkept-2"); r.Code != toolkit.CodeNotFound {
		t.Fatalf("the kept result: %s %q; want none (its answer was not kept)", r.Code, r.Text())
	}
}
