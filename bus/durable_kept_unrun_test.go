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

// TestDurableUnrunKeptOnceBucketBack: a durable call answered without
// running (here invalid_input) while the results bucket cannot take its
// final is not ended in the stream until the bucket has the final: once
// the bucket is back, the final its caller was sent is kept, for a
// caller that missed it to read.
func TestDurableUnrunKeptOnceBucketBack(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("put", "Store a value.", func(ctx context.Context, in struct{}) (string, error) {
		return "put", nil
	}))
	keepingWorker(t, s, tk, bus.WorkerOptions{Instance: "w1"}, 0)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	ctx := ctxT(t)
	if err := js.DeleteKeyValue(ctx, wire.BucketResults); err != nil {
		t.Fatal(err)
	}

	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	body, err := wire.Msgpack.Marshal(&wire.Request{ID: "u1", Name: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: wire.DurableSubject("put", ""), Data: body,
		Header: nats.Header{wire.HeaderReply: {inbox}, jetstream.MsgIDHeader: {"u1"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(guard); err != nil {
		t.Fatalf("no final: %v", err)
	}

	if _, err := js.CreateKeyValue(ctx, bus.ResultsBucketConfig(0, 1)); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, nc, nil)
	var kept *toolkit.Response
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if kept = c.Result(ctx, "u1"); kept.Code == toolkit.CodeInvalidInput {
			return
		}
	}
	t.Fatalf("kept once the bucket is back: %s %q; want the invalid_input its caller was sent", kept.Code, kept.Text())
}
