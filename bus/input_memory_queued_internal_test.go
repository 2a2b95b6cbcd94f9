package bus

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

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
	started := make(chan struct{}, 2)
	release := make(chan struct{})
	if err := tk.Add(toolkit.Func("hold", "Holds until released.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (int, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return len(in.Text), nil
	})); err != nil {
		t.Fatal(err)
	}
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
	w, err := Serve(nc, tk, &WorkerOptions{Instance: "w", MaxInputMemory: 4 << 20, Durable: &DurableOptions{JetStream: natstest.JS(t, nc)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	var released sync.Once
	free := func() { released.Do(func() { close(release) }) }
	t.Cleanup(free)
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{StallTimeout: natstest.Guard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	text := strings.Repeat("x", 1_000_000)
	first := make(chan *toolkit.Response, 1)
	go func() {
		first <- c.Invoke(t.Context(), toolkit.ToolCall{ID: "first", Name: "hold", Input: map[string]any{"text": text}})
	}()
	select {
	case <-started:
	case <-time.After(natstest.Guard):
		t.Fatal("the first call never started")
	}

	caller := natstest.Connect(t, s)
	inbox := wire.Inbox("") + "waiting"
	sub, err := caller.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	data, err := wire.Msgpack.Marshal(&wire.Request{ID: "waiting", Input: map[string]any{"text": text}})
	if err != nil {
		t.Fatal(err)
	}
	// Ten heartbeats of 50 ms outlast the timeout of 300 ms.
	h := nats.Header{wire.HeaderHeartbeat: {"50"}, wire.HeaderTimeout: {"300"}}
	if err := caller.PublishMsg(&nats.Msg{Subject: wire.CallSubject("queued", ""), Reply: inbox, Header: h, Data: data}); err != nil {
		t.Fatal(err)
	}
	next := func() wire.Frame {
		t.Helper()
		m, err := sub.NextMsg(natstest.Guard)
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil {
			t.Fatal(err)
		}
		return f
	}
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
