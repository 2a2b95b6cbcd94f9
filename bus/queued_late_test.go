package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestQueuedFrameAfterDelivery: a call its worker queued comes back to
// its caller from two publishers, the worker that queued it (the queued
// frame, with the call's sequence in the calls stream) and the worker the
// queue delivered it to (frames of delivery 1). When a frame of the
// delivery came first, the caller dropped the queued frame as one of an
// earlier delivery and never learnt the sequence: once the delivery's
// worker fell silent with the queue done with the call and no final kept,
// the caller waited for its deadline instead of ending it worker_lost.
func TestQueuedFrameAfterDelivery(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	ctx := ctxT(t)
	st, err := js.CreateStream(ctx, bus.CallsStreamConfig(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	// The call, queued, delivered and acknowledged: the queue is done with it.
	ack, err := js.Publish(ctx, wire.DurableSubject("sleep", ""), []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "sleep", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubject: wire.DurableSubject("sleep", "")})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The two workers' frames, the delivery's first; then silence.
	sub, err := nc.Subscribe(wire.CallSubject("sleep", ""), func(m *nats.Msg) {
		for _, f := range []*wire.Frame{
			{Kind: wire.KindHeartbeat, ID: "d1", Seq: 1, Attempt: 1, MaxAttempts: 5, RedeliverMS: 60_000},
			{Kind: wire.KindQueued, ID: "d1", Seq: 1, Stream: ack.Sequence},
		} {
			data, err := wire.Msgpack.Marshal(f)
			if err != nil {
				panic(err)
			}
			_ = nc.Publish(m.Reply, data)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: 300 * time.Millisecond})
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	r := c.Invoke(cctx, toolkit.ToolCall{ID: "d1", Name: "sleep", Input: map[string]any{}})
	if r.Code != toolkit.CodeWorkerLost {
		t.Fatalf("a silent call the queue is done with: %s %s %q, want worker_lost", r.State, r.Code, r.Text())
	}
}
