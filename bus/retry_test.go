package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRetryAfterWorkerLost: the worker that took a read-only call goes
// silent; the client sends the call again, another worker answers, and the
// tool sees the first call's id as its key. A tool that may have effects
// is not sent again.
func TestRetryAfterWorkerLost(t *testing.T) {
	s := natstest.Embedded(t, false)
	keys := make(chan string, 4)
	lookup := toolkit.New(nil)
	mustAdd(t, lookup, toolkit.Raw("lookup", "Look it up.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		keys <- call.Key() + " " + call.ID
		return w.Write(toolkit.Text("found"))
	}), toolkit.ReadOnly())
	charge := toolkit.New(nil)
	mustAdd(t, charge, toolkit.Func("charge", "Charge a card.", func(ctx context.Context, in struct{}) (string, error) { return "charged", nil }))

	// lost takes the first call of tool and is gone; then a worker with tk
	// comes up in its place.
	lost := func(tool string, tk *toolkit.Toolkit) {
		nc := natstest.Connect(t, s)
		taken := make(chan struct{})
		hole, err := nc.QueueSubscribe(wire.CallSubject(tool, ""), bus.DefaultQueue, func(*nats.Msg) {
			select {
			case <-taken:
			default:
				close(taken)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		nc.Flush()
		go func() {
			<-taken
			hole.Unsubscribe()
			serve(t, natstest.Connect(t, s), tk, nil)
		}()
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat})

	lost("lookup", lookup)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "look-1", Name: "lookup"})
	if r.ID != "look-1" || r.Text() != "found" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
		t.Fatalf("read-only call after a lost worker: %+v", r)
	}
	if k := <-keys; k != "look-1 look-1-r2" {
		t.Errorf("the tool saw key and id %q, want the first id as key", k)
	}

	lost("charge", charge)
	r = c.Invoke(ctxT(t), toolkit.ToolCall{ID: "charge-1", Name: "charge"})
	if r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaAttempts] != nil {
		t.Fatalf("a call that may have run was sent again: %+v", r)
	}
}

// TestRetryAfterOverloaded: an overloaded answer to an idempotent call is
// retried after retry_after_ms and runs once a slot is free.
func TestRetryAfterOverloaded(t *testing.T) {
	s := natstest.Embedded(t, false)
	release, started := make(chan struct{}), make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("hold", "Hold the only slot.", func(ctx context.Context, in struct{}) (string, error) {
		close(started)
		<-release
		return "held", nil
	}))
	mustAdd(t, tk, toolkit.Func("put", "Put a value.", func(ctx context.Context, in struct{}) (string, error) { return "put", nil }),
		toolkit.WithIdempotency(toolkit.Idempotent))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{MaxInFlight: 1, RetryAfter: 50 * time.Millisecond})
	c := newClient(t, natstest.Connect(t, s), nil)
	held := make(chan *toolkit.Response, 1)
	go func() { held <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hold"}) }()
	<-started
	go func() { time.Sleep(20 * time.Millisecond); close(release) }()
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put"}); r.Text() != "put" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) == "" {
		t.Fatalf("idempotent call after overloaded: %+v", r)
	}
	<-held
}
