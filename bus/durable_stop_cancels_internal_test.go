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

// cancelsGate is a server's JetStream whose binding of the cancels
// stream waits for open (or its context): a bind still under way.
type cancelsGate struct {
	jetstream.JetStream
	open chan struct{}
}

func (g *cancelsGate) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if name == wire.StreamCancels {
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.JetStream.Stream(ctx, name)
}

// TestStoppingWorkerHonoursRecordedCancels: a stopping worker ends its
// pull loops, which still take the calls of the batch they hold. Such a
// call, cancelled while it waited in the queue (its record in the
// cancels stream, its cancel unheard here), is answered interrupted
// without running: the lookup of its cancel is not cut short by the
// stop, nor lost when the stop came while the worker was still binding
// the cancels stream (the bind a stop ends is made for the lookup).
func TestStoppingWorkerHonoursRecordedCancels(t *testing.T) {
	t.Run("bound", func(t *testing.T) { testStoppingWorkerHonoursRecordedCancels(t, false) })
	t.Run("bind cut by the stop", func(t *testing.T) { testStoppingWorkerHonoursRecordedCancels(t, true) })
}

func testStoppingWorkerHonoursRecordedCancels(t *testing.T, cut bool) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	var js jetstream.JetStream = natstest.JS(t, nc)
	gate := &cancelsGate{JetStream: js, open: make(chan struct{})}
	if cut {
		// The streams exist (another worker made them); this worker's
		// bind of the cancels stream waits.
		if _, err := js.CreateStream(natstest.Ctx(t), CancelsStreamConfig(1)); err != nil {
			t.Fatal(err)
		}
		js = gate
	}
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
	if !cut && d.cancelsStream() == nil {
		t.Fatal("no cancels stream")
	}
	// The stop has begun: the pull loops are told to end, and so is the
	// bind.
	d.mu.Lock()
	d.cancel()
	d.mu.Unlock()
	d.wg.Wait()
	if cut {
		d.cancelsMu.Lock()
		bound := d.cancels != nil
		d.cancelsMu.Unlock()
		if bound {
			t.Fatal("the cancels stream was bound before the stop")
		}
		close(gate.open)
	}

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
