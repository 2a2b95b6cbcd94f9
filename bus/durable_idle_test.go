package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// The consumer of a tool no worker serves any more is deleted once idle
// for DurableOptions.ConsumerIdle, so tools added and removed (an MCP
// server's, say) leave no consumer each in the calls stream; the
// consumers of the tools served stay.
func TestDurableConsumerOfRemovedToolIsDeleted(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, nc, tk, &bus.WorkerOptions{Durable: &bus.DurableOptions{JetStream: js, ConsumerIdle: time.Second}})
	st, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(name string) bool {
		_, err := st.Consumer(ctxT(t), name)
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	const churn = 5
	for _, name := range []string{"gone1", "gone2", "gone3", "gone4", "gone5"}[:churn] {
		mustAdd(t, tk, toolkit.Func(name, "Comes and goes.", func(ctx context.Context, in struct{}) (string, error) { return "", nil }))
		natstest.WaitFor(t, "the consumer of "+name, func() bool { return exists(name) })
		tk.Remove(name)
	}
	natstest.WaitFor(t, "the consumers of the tools removed to be deleted", func() bool {
		for name := range st.ConsumerNames(ctxT(t)).Name() {
			if name != "echo" {
				return false
			}
		}
		return true
	})
	if !exists("echo") {
		t.Error("the consumer of a tool served was deleted")
	}
}

// A worker whose slots are all busy with calls on the core path does not
// pull, and has none of the tool's durable calls unacknowledged, so
// JetStream deletes the tool's consumer once idle for ConsumerIdle. The
// worker still serves the tool: once a slot is free it makes the
// consumer again and takes the tool's durable calls.
func TestDurableConsumerDeletedUnderBusyWorker(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	release := make(chan struct{})
	mustAdd(t, tk, toolkit.Func("block", "Blocks until released.", func(ctx context.Context, in struct{}) (string, error) {
		<-release
		return "released", nil
	}))
	serve(t, nc, tk, &bus.WorkerOptions{MaxInFlight: 1, Durable: &bus.DurableOptions{JetStream: js, ConsumerIdle: time.Second}})
	st, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), nil)
	blocked := make(chan *toolkit.Response, 1)
	go func() { blocked <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "block"}) }()
	natstest.WaitFor(t, "the consumer of echo deleted while the worker's slot is busy", func() bool {
		_, err := st.Consumer(ctxT(t), "echo")
		return errors.Is(err, jetstream.ErrConsumerNotFound)
	})
	close(release)
	if r := <-blocked; r.Text() != "released" {
		t.Fatalf("the core call: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "again"}}); r.Text() != "again" {
		t.Fatalf("a durable call after the consumer was deleted under its worker: %+v", r)
	}
}
