package bus

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// unreadableResults is a JetStream whose reads of kept finals (direct
// gets, through its connection) fail while fail is set: they go to a
// server without the results bucket (a replica without a leader for a
// moment).
type unreadableResults struct {
	jetstream.JetStream
	elsewhere *nats.Conn
	fail      atomic.Bool
}

func (u *unreadableResults) Conn() *nats.Conn {
	if u.fail.Load() {
		return u.elsewhere
	}
	return u.JetStream.Conn()
}

// TestExhaustedKeepsUnreadableKept: a call whose final was kept and whose
// acknowledgement was lost runs out of deliveries; the worker answering
// the advisory cannot read the results bucket at that moment (its reads
// went around the bucket the test made fail, so the test did not fail
// them; and it raced with the final's keep, seen loaded). It cannot
// tell that the call ended, so it keeps nothing in place of the kept
// final: Client.Result still gives what the call answered, not a
// worker_lost made up over it.
func TestExhaustedKeepsUnreadableKept(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("put", "Store a value.", func(ctx context.Context, in struct{}) (string, error) {
		return "stored", nil
	})); err != nil {
		t.Fatal(err)
	}
	w := serve(t, nc, tk, &WorkerOptions{Instance: "w1", Durable: &DurableOptions{JetStream: js}, Results: &ResultsOptions{JetStream: js}})
	ctx := natstest.Ctx(t)
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "p1", Name: "put", Durable: true}); r.Text() != "stored" {
		t.Fatalf("the call: %s %q", r.Code, r.Text())
	}
	// Its final is kept (its caller may hear it first).
	natstest.WaitFor(t, "p1's final kept", func() bool { return c.Result(ctx, "p1").Text() == "stored" })
	// The same call, still in the queue as far as the stream knows (its
	// acknowledgement lost), exhausted its deliveries.
	body, err := wire.Msgpack.Marshal(&wire.Request{ID: "p1"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: "tools.durable.gone", Data: body,
		Header: nats.Header{wire.HeaderReply: {"_INBOX.t.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	u := &unreadableResults{JetStream: w.results.js, elsewhere: natstest.Connect(t, natstest.Embedded(t, false))}
	u.fail.Store(true)
	w.results.js = u
	w.dur.exhaust("put", ack.Sequence, 3)
	u.fail.Store(false)
	natstest.WaitFor(t, "the exhausted call to leave the stream", func() bool {
		_, err := w.dur.stream.GetMsg(ctx, ack.Sequence)
		return errors.Is(err, jetstream.ErrMsgNotFound)
	})
	// Whatever the worker published to the bucket is in by now.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if r := c.Result(ctx, "p1"); r.Text() != "stored" {
		t.Fatalf("kept after the exhausted delivery: %s %q", r.Code, r.Text())
	}
}
