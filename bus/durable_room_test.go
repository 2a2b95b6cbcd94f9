package bus_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableSmallStore: JetStream reserves a stream's MaxBytes from the
// server's store when the stream is made, and refuses a stream that does
// not fit. A server whose store is smaller than the calls stream's bound
// in bytes (a small disk, max_file_store, an account's limit) refused
// the calls stream, and a worker with the durable path on did not start
// at all. The stream is made bounded in calls only there, and the call
// runs.
func TestDurableSmallStore(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) { o.JetStreamMaxStore = bus.CallsMaxBytes / 4 })
	nc := natstest.Conn(t, s)
	js := natstest.JS(t, nc)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("echo", "Echo.", func(_ context.Context, in struct{ S string }) (string, error) { return in.S, nil }))
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: js}})
	if err != nil {
		t.Fatalf("a worker on a server whose store is %d bytes: %v", bus.CallsMaxBytes/4, err)
	}
	t.Cleanup(func() { w.Stop(ctxT(t)) })
	st, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.MaxMsgs != bus.CallsMaxCalls || c.Discard != bus.CallsStreamConfig(0, 1).Discard {
		t.Errorf("the calls stream on a small store: max_msgs %d, discard %v; want bounded in calls", c.MaxMsgs, c.Discard)
	}
	c := newClient(t, natstest.Conn(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "d1", Name: "echo", Durable: true, Input: map[string]any{"S": "hi"}}); r.Text() != "hi" {
		t.Fatalf("a durable call: %s %s %s", r.State, r.Code, r.Text())
	}
}
