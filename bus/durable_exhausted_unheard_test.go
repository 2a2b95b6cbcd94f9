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

// TestDurableExhaustedWhileNoWorkerRuns: a durable call's last delivery
// lost its worker while no other worker was up (the fleet restarting).
// JetStream's max-deliveries advisory then reached nobody: the call sat
// in the calls stream for a day and no final was kept for it, so a
// worker started later never answered it, and its waiting caller heard
// nothing. The advisory is kept for the workers that start later.
func TestDurableExhaustedWhileNoWorkerRuns(t *testing.T) {
	s := natstest.Embedded(t, false)
	const ackWait = 2 * time.Second
	started := make(chan struct{}, 4)
	newWorker := func(instance string, hang bool) (*bus.Worker, *nats.Conn) {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw("put", "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
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
	// Where the test sees the advisory go by, to start the next worker
	// only once it has.
	nc := natstest.Connect(t, s)
	advisories := make(chan *nats.Msg, 4)
	if _, err := nc.ChanSubscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+wire.StreamCalls+".*", advisories); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// A stall timeout longer than the test: only the fleet's answer can
	// end the call.
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond, StallTimeout: time.Hour})
	w, wnc := newWorker("doomed", true)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "unheard", Name: "put", Durable: true}) }()
	select {
	case <-started:
	case r := <-done:
		t.Fatalf("the call ended before it started: %+v", r)
	}
	killDurableWorker(w, wnc)
	select {
	case <-advisories: // ackWait after the kill: no worker heard it
	case <-time.After(guard):
		t.Fatal("no max-deliveries advisory")
	}
	newWorker("survivor", false)
	var r *toolkit.Response
	select {
	case r = <-done:
	case <-time.After(guard):
		t.Fatal("the worker started after the call's deliveries ran out never answered it")
	}
	if r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaWorker] != "survivor" {
		t.Fatalf("an exhausted call answered by a worker started after: %+v", r)
	}
	if kept := c.Result(ctxT(t), "unheard"); kept.Code != toolkit.CodeWorkerLost {
		t.Fatalf("its kept result: %+v", kept)
	}
	st, err := natstest.JS(t, nc).Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(guard); ; time.Sleep(20 * time.Millisecond) {
		info, err := st.Info(ctxT(t))
		if err == nil && info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the calls stream after it: %+v, %v", info, err)
		}
	}
}
