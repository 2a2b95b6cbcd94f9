package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableExhaustedConsumerDeleted: the exhausted stream's consumer,
// which the fleet shares, is deleted while workers run (an operator's
// `nats consumer rm`, the stream removed and made again). JetStream ends
// every worker's taking of it; the workers only logged that at debug and
// took no advisory again until restarted, so a call whose deliveries ran
// out meanwhile sat unanswered in the calls stream. A worker binds the
// consumer again, and answers it.
func TestDurableExhaustedConsumerDeleted(t *testing.T) {
	s := natstest.Embedded(t, false)
	const ackWait = 2 * time.Second
	started := make(chan struct{}, 4)
	newWorker := func(instance, tool string, hang bool) (*bus.Worker, *nats.Conn) {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw(tool, "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				if hang {
					started <- struct{}{}
					<-ctx.Done() // the worker dies meanwhile
					return ctx.Err()
				}
				return w.Write(toolkit.Text("done"))
			}))
		return startDurableWorker(t, s, tk, bus.WorkerOptions{Instance: instance, Durable: &bus.DurableOptions{MaxDeliver: 1}}, ackWait, true)
	}
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	newWorker("survivor", "other", false) // not the call's tool: it can only answer it exhausted
	if err := js.DeleteConsumer(ctxT(t), wire.StreamExhausted, "toolbus-exhausted"); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond, StallTimeout: time.Hour})
	w, wnc := newWorker("doomed", "put", true)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "orphan", Name: "put", Durable: true}) }()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the call ended before it started: %+v", r)
	}
	killDurableWorker(w, wnc)
	var r *toolkit.Response
	select {
	case r = <-done:
	case <-time.After(2 * guard):
		t.Fatal("with the exhausted stream's consumer deleted, no worker answered a call whose deliveries ran out")
	}
	if r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaWorker] != "survivor" {
		t.Fatalf("an exhausted call: %+v", r)
	}
}
