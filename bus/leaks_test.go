package bus_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopReleasesSubscriptions serves and stops workers on one
// connection, which stays the caller's: each stop leaves the connection
// with the subscriptions it had before the worker, for every path.
func TestStopReleasesSubscriptions(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	// JetStream's requests share one reply subscription, made by the
	// first: made before the count.
	if _, err := js.AccountInfo(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	base := nc.NumSubscriptions()
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	for _, opts := range []*bus.WorkerOptions{
		nil,
		{Durable: &bus.DurableOptions{JetStream: js}, Results: &bus.ResultsOptions{JetStream: js}, Sessions: &bus.SessionsOptions{JetStream: js}},
	} {
		w, err := bus.Serve(nc, tk, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := nc.NumSubscriptions(); n != base {
			t.Fatalf("after Stop the connection has %d subscriptions, %d before the worker", n, base)
		}
	}
}
