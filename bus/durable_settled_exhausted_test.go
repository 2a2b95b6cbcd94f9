package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableExhaustedUnansweredEnds: a durable call whose caller heard
// its first delivery but not its last, whose deliveries ran out with no
// worker left to answer the advisory and nothing kept, could not be
// delivered again, but its caller looked for it for good: the call was
// settled only once its tool's consumer's ack floor passed it, and the
// ack floor does not move past a call whose deliveries ran out. It is
// now also settled when the consumer delivered it and awaits no
// acknowledgement at all, and the caller ends it worker_lost.
func TestDurableExhaustedUnansweredEnds(t *testing.T) {
	s := natstest.Embedded(t, false)
	started := make(chan int, 2)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("put", "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			if call.Attempt == 1 {
				if err := w.Write(toolkit.Text("begun")); err != nil {
					return err
				}
			}
			started <- call.Attempt
			<-ctx.Done() // the worker dies meanwhile
			return ctx.Err()
		}), toolkit.WithIdempotency(toolkit.Idempotent))
	opts := bus.WorkerOptions{AnnounceInterval: -1, Durable: &bus.DurableOptions{MaxDeliver: 2}}
	w1, nc1 := startDurableWorker(t, s, tk, opts, lastDeliveryAckWait, false)
	// Heartbeats far apart: the caller hears the first delivery by its
	// chunk, the second not at all.
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MaxHeartbeat, StallTimeout: time.Second})
	begun := make(chan struct{})
	done := make(chan *toolkit.Response, 1)
	go func() {
		var final *toolkit.Response
		for ev := range c.Call(ctxT(t), toolkit.ToolCall{ID: "lost-1", Name: "put", Durable: true}) {
			if ev.Chunk != nil {
				close(begun)
			}
			if ev.Final != nil {
				final = ev.Final
			}
		}
		done <- final
	}()
	w, nc := w1, nc1
	for _, attempt := range []int{1, 2} {
		select {
		case got := <-started:
			if got != attempt {
				t.Fatalf("delivery %d began, want %d", got, attempt)
			}
		case r := <-done:
			t.Fatalf("the call ended on delivery %d: %+v", attempt, r)
		case <-time.After(guard):
			t.Fatalf("delivery %d did not begin", attempt)
		}
		if attempt == 1 {
			select {
			case <-begun:
			case <-time.After(guard):
				t.Fatal("the caller did not hear the first delivery")
			}
		}
		killDurableWorker(w, nc)
		if attempt == 1 {
			w, nc = startDurableWorker(t, s, tk, opts, lastDeliveryAckWait, false)
		}
	}
	// No worker is left to pull the tool's calls: a pull of the test's
	// has the server find that the call's deliveries ran out.
	js := natstest.JS(t, natstest.Connect(t, s))
	cons, err := js.Consumer(ctxT(t), wire.StreamCalls, "put")
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call's deliveries run out", func() bool {
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			t.Fatalf("the call delivered a third time: %s", m.Subject())
		}
		info, err := cons.Info(ctxT(t))
		return err == nil && info.NumAckPending == 0
	})
	var r *toolkit.Response
	select {
	case r = <-done:
	case <-time.After(guard):
		t.Fatal("the call whose deliveries ran out did not end")
	}
	if r == nil || r.Code != toolkit.CodeWorkerLost {
		t.Fatalf("the call whose deliveries ran out: %+v", r)
	}
}
