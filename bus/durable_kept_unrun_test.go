package bus_test

import (
	"context"
	"sync/atomic"
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

	natstest.CreateAfterDelete(ctx, t, func() error {
		_, err := js.CreateKeyValue(ctx, bus.ResultsBucketConfig(0, 1))
		return err
	})
	c := newClient(t, nc, nil)
	var kept *toolkit.Response
	rctx := ctxT(t) // the test's ctx may be near its end
	for deadline := time.Now().Add(guard); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if kept = c.Result(rctx, "u1"); kept.Code == toolkit.CodeInvalidInput {
			return
		}
	}
	t.Fatalf("not kept %v after the bucket is back: %s %q; want the invalid_input its caller was sent", guard, kept.Code, kept.Text())
}

// TestDurableLongRunUnkeptDeliveredAgain: a durable call that ran for
// half its AckWait keeps its final read-first (it may have been
// delivered again); when the results bucket cannot be read then, the call
// is not acknowledged but left to be delivered again, whose final is kept
// once the bucket is back: acknowledged, the call would have ended with
// nothing kept for a caller that missed its final.
func TestDurableLongRunUnkeptDeliveredAgain(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	ctx := ctxT(t)
	first, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("put", "Store a value.", func(ctx context.Context, in struct{}) (string, error) {
		if runs.Add(1) == 1 {
			close(first)
			<-release
		}
		return "put", nil
	}), toolkit.WithIdempotency(toolkit.Idempotent))
	const ackWait = time.Second
	keepingWorker(t, s, tk, bus.WorkerOptions{Instance: "w1"}, ackWait)
	c := newClient(t, nc, nil)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{ID: "p1", Name: "put", Durable: true}) }()
	<-first
	if err := js.DeleteKeyValue(ctx, wire.BucketResults); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ackWait / 2) // ran for half its AckWait: kept read-first
	close(release)
	if r := <-done; r.Text() != "put" {
		t.Fatalf("the caller got %s %q", r.Code, r.Text())
	}
	natstest.CreateAfterDelete(ctx, t, func() error {
		_, err := js.CreateKeyValue(ctx, bus.ResultsBucketConfig(0, 1))
		return err
	})
	var kept *toolkit.Response
	rctx := ctxT(t) // the test's ctx may be near its end
	for deadline := time.Now().Add(guard); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if kept = c.Result(rctx, "p1"); kept.Text() == "put" {
			return
		}
	}
	t.Fatalf("not kept %v after the bucket is back: %s %q (runs: %d); want the call's result", guard, kept.Code, kept.Text(), runs.Load())
}
