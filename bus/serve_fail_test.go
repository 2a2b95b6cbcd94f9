package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestServeFailedLeavesNothing: a Serve that fails leaves nothing that
// takes calls: a durable call queued after it is not run by the worker
// that failed to start.
func TestServeFailedLeavesNothing(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	var ran atomic.Int64
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("count", "Counts its runs.", func(ctx context.Context, _ struct{}) (string, error) {
		ran.Add(1)
		return "ok", nil
	}))
	for _, o := range []*bus.WorkerOptions{
		{Instance: "not.one.token"},                // refused before anything starts
		{AnnounceInterval: 500 * time.Microsecond}, // refused by the announcer, after the pull loops started
	} {
		o.Durable = &bus.DurableOptions{JetStream: js}
		if _, err := bus.Serve(nc, tk, o); err == nil {
			t.Fatalf("Serve took %+v", o)
		}
	}
	// The calls stream, as a worker that did start would have made it.
	if _, err := js.CreateOrUpdateStream(ctxT(t), bus.CallsStreamConfig(2*time.Minute, 1)); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	r := c.Invoke(ctx, toolkit.ToolCall{Name: "count", Durable: true})
	if ran.Load() != 0 || r.State == toolkit.StateSuccess {
		t.Fatalf("a durable call queued after Serve failed ran %d times: %+v", ran.Load(), r)
	}
}
