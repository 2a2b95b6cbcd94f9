package bus

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStoppingWorkerHonoursRecordedCancels: a stopping worker ends its
// pull loops, which still take the calls of the batch they hold. Such a
// call, cancelled while it waited in the queue (its record in the
// cancels stream, its cancel unheard here), is answered interrupted
// without running: the lookup of its cancel is not cut short by the stop.
func TestStoppingWorkerHonoursRecordedCancels(t *testing.T) {
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
	w := serve(t, nc, tk, &WorkerOptions{Instance: "w1", Durable: &DurableOptions{JetStream: js}})
	d := w.dur
	if d.cancels == nil {
		t.Fatal("no cancels stream")
	}
	// The stop has begun: the pull loops are told to end.
	d.mu.Lock()
	d.cancel()
	d.mu.Unlock()
	d.wg.Wait()

	ctx := natstest.Ctx(t)
	cnc := natstest.Connect(t, s)
	replies, err := cnc.SubscribeSync("_INBOX.t.*")
	if err != nil {
		t.Fatal(err)
	}
	cnc.Flush()
	body, err := wire.Msgpack.Marshal(&wire.Request{ID: "c9"})
	if err != nil {
		t.Fatal(err)
	}
	cjs := natstest.JS(t, cnc)
	if _, err := cjs.PublishMsg(ctx, &nats.Msg{Subject: wire.DurableSubject("charge", ""), Data: body,
		Header: nats.Header{wire.HeaderReply: {"_INBOX.t.1"}, jetstream.MsgIDHeader: {"c9"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cjs.PublishMsg(ctx, &nats.Msg{Subject: wire.CancelledSubject("", "c9"), Header: nats.Header{wire.HeaderVersion: {wire.Version}}}); err != nil {
		t.Fatal(err)
	}
	// Its cancel was not heard here (as for a call queued before the
	// worker heard cancels).
	d.heardFrom.Store(math.MaxUint64)

	// The loop's batch still holds the call.
	cons, err := d.consumer(ctx, "charge")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := pull(d.js, cons, 1, guardWait)
	if err != nil {
		t.Fatal(err)
	}
	p := &puller{d: d, tool: "charge"}
	for m := range batch.Messages() {
		p.take(cons, batch, m, cons.CachedInfo().Config)
	}
	m, err := replies.NextMsg(guardWait)
	if err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Kind != wire.KindFinal || f.Final.Code != toolkit.CodeInterrupted || runs.Load() != 0 {
		t.Fatalf("a call cancelled in the queue, taken by a stopping worker: %s frame, code %s, runs %d", f.Kind, f.Final.Code, runs.Load())
	}
}

const guardWait = 30 * time.Second
