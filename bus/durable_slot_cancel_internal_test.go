package bus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableCancelWhileWaitingForSlot: a durable call pulled while a
// slot was free waits for one when another call took it meanwhile. A
// cancel then ends it at once, interrupted and never run; it used to be
// answered only when the worker's clock gave up on it as on a tool that
// ignores its context (AbandonAfter: an hour here).
func TestDurableCancelWhileWaitingForSlot(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	var runs atomic.Int32
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("charge", "Charges a card.", func(ctx context.Context, in struct{}) (string, error) {
		runs.Add(1)
		return "charged", nil
	})); err != nil {
		t.Fatal(err)
	}
	w := serve(t, nc, tk, &WorkerOptions{Instance: "w1", MaxInFlight: 1, AbandonAfter: time.Hour, Durable: &DurableOptions{JetStream: js}})
	ctx := natstest.Ctx(t)
	cons, err := w.dur.consumer(ctx, "charge")
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the pull loop waiting for a call", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumWaiting > 0
	})
	w.slots <- struct{}{} // another call takes the worker's one slot
	defer func() { <-w.slots }()

	cnc := natstest.Connect(t, s)
	replies, err := cnc.SubscribeSync("_INBOX.t.*")
	if err != nil {
		t.Fatal(err)
	}
	cnc.Flush()
	body, err := wire.Msgpack.Marshal(&wire.Request{ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := natstest.JS(t, cnc).PublishMsg(ctx, &nats.Msg{Subject: wire.DurableSubject("charge", ""), Data: body,
		Header: nats.Header{wire.HeaderReply: {"_INBOX.t.1"}, jetstream.MsgIDHeader: {"c1"}}}); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call waiting for its slot", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.calls[callKey("", "c1")] != nil
	})
	if err := cnc.PublishMsg(cancelMsg(wire.CancelSubject("", "c1"), "")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(guardWait); ; {
		m, err := replies.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatalf("no final for the call cancelled while it waited for its slot: %v", err)
		}
		var f wire.Frame
		if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
			t.Fatal(err)
		}
		if f.Kind != wire.KindFinal {
			continue // a heartbeat
		}
		if f.Final.Code != toolkit.CodeInterrupted || runs.Load() != 0 {
			t.Fatalf("the call cancelled while it waited for its slot: code %s, runs %d", f.Final.Code, runs.Load())
		}
		return
	}
}
