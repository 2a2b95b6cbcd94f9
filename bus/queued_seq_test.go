package bus_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestQueuedFrameFollowsPassedOnFrames: a call passed on by a worker that
// had sent its caller heartbeats already (Toolbus-Seq-After) reaches a
// worker whose tool is durable by default, which queues it. Its queued
// frame is numbered after those heartbeats: numbered 1, the caller took
// it for an old frame and dropped it, never learnt the call was durable,
// and ended it worker_lost (and sent it again) while it waited in the
// queue.
func TestQueuedFrameFollowsPassedOnFrames(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool(), toolkit.Durable())
	wnc := natstest.Connect(t, s)
	w, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: natstest.JS(t, wnc)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	nc := natstest.Connect(t, s)
	replies, err := nc.SubscribeSync("_INBOX.t.*")
	if err != nil {
		t.Fatal(err)
	}
	body, err := wire.Msgpack.Marshal(&wire.Request{ID: "q1", Input: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	// As the worker that passed it on sends it, after 5 frames of its own.
	if err := nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Reply: "_INBOX.t.1", Data: body,
		Header: nats.Header{wire.HeaderForwarded: {"w0"}, wire.HeaderSeqAfter: {"5"}}}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := replies.NextMsg(guard)
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
			t.Fatal(err)
		}
		if f.Kind == wire.KindQueued {
			if f.Seq <= 5 {
				t.Fatalf("the queued frame has seq %d: its caller, at seq 5, drops it", f.Seq)
			}
			return
		}
		if f.Kind == wire.KindFinal && f.Attempt == 0 {
			t.Fatalf("the call was not queued: %s %q", f.Final.Code, f.Final.Text())
		}
	}
}
