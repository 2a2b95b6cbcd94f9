package bus

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCallWaitingForInputMemoryQueued: a call of a tool durable by
// default that waited for input memory is queued with what is left of
// its timeout, counted from when it came. It was queued with its whole
// timeout, which the worker taking it counts from when it was queued: a
// call that waited past its timeout ran, for a caller that had given up.
func TestCallWaitingForInputMemoryQueued(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	started, free := addHold(t, tk)
	ran := make(chan struct{}, 1)
	if err := tk.Add(toolkit.Func("queued", "Queued by default.", func(context.Context, struct {
		Text string `json:"text"`
	}) (int, error) {
		ran <- struct{}{}
		return 0, nil
	}), toolkit.Durable()); err != nil {
		t.Fatal(err)
	}
	nc := natstest.Connect(t, s)
	serve(t, nc, tk, &WorkerOptions{Instance: "w", MaxInputMemory: 4 << 20, Durable: &DurableOptions{JetStream: natstest.JS(t, nc)}})
	first := holdHalf(t, s, started)

	// Ten heartbeats of 50 ms outlast the timeout of 300 ms.
	h := nats.Header{wire.HeaderHeartbeat: {"50"}, wire.HeaderTimeout: {"300"}}
	next := callWaiting(t, s, "queued", h)
	for n := 0; n < 10; n++ {
		if f := next(); f.Kind != wire.KindHeartbeat {
			t.Fatalf("frame %d while waiting: %s", n+1, f.Kind)
		}
	}
	free()
	for {
		f := next()
		if f.Kind == wire.KindFinal {
			if f.Final.Code != toolkit.CodeTimeout {
				t.Fatalf("the call that waited past its timeout: %s %s %q", f.Final.State, f.Final.Code, f.Final.Text())
			}
			break
		}
	}
	if r := <-first; r.State != toolkit.StateSuccess {
		t.Fatalf("first call: %s %s %q", r.State, r.Code, r.Text())
	}
	select {
	case <-ran:
		t.Fatal("the call that waited past its timeout ran")
	default:
	}
}
