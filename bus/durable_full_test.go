package bus_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableQueueFull: the calls stream is bounded (a caller flooding
// durable calls fills it, not the server's store, which every bucket and
// stream shares), and a full one refuses the new call, overloaded, with
// the calls already queued kept and run: nothing is dropped to make room.
// A call the worker would queue (its tool durable by default) is refused
// the same way.
func TestDurableQueueFull(t *testing.T) {
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))

	cfg := bus.CallsStreamConfig(0, 1)
	if cfg.MaxMsgs <= 0 || cfg.MaxBytes <= 0 || cfg.Discard != jetstream.DiscardNew {
		t.Fatalf("the calls stream as a worker creates it is unbounded: max_msgs %d, max_bytes %d, discard %v", cfg.MaxMsgs, cfg.MaxBytes, cfg.Discard)
	}
	// An operator's smaller stream, made before the worker: three calls.
	cfg.MaxMsgs = 3
	if _, err := js.CreateStream(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("hold", "Wait for the test.", func(ctx context.Context, in struct{ N int }) (int, error) {
		select {
		case <-release:
			return in.N, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}))
	// hold is durable by default: a call sent on the core path is queued
	// by the worker.
	startDurableWorker(t, s, tk, bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{Tools: []string{"hold"}}}, 0, false)
	c := newClient(t, natstest.Connect(t, s), nil)

	finals := make([]*toolkit.Response, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			finals[i] = c.Invoke(ctxT(t), toolkit.ToolCall{ID: "q" + string(rune('0'+i)), Name: "hold", Durable: true, Input: map[string]any{"N": i}})
		})
	}
	st, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(guard); ; time.Sleep(20 * time.Millisecond) {
		if info, err := st.Info(ctxT(t)); err == nil && info.State.Msgs == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("three calls were not queued")
		}
	}
	for _, durable := range []bool{true, false} {
		// Sent durable, the client queues it; sent on the core path, the
		// worker does. Either way it is refused, not run: run on the core
		// path, a call of a tool durable by default would be lost with its
		// worker.
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hold", Durable: durable, Input: map[string]any{"N": 3}})
		if r.Code != toolkit.CodeOverloaded || !strings.Contains(r.Text(), "durable queue is full") || r.Metadata[wire.MetaRetryAfterMS] == nil {
			t.Errorf("a call past the full queue (durable %v): %s %s %v", durable, r.Code, r.Text(), r.Metadata)
		}
	}
	close(release)
	wg.Wait()
	for i, f := range finals {
		if f.State != toolkit.StateSuccess || f.Text() != string(rune('0'+i)) {
			t.Errorf("queued call %d: %s %s %s", i, f.State, f.Code, f.Text())
		}
	}
}
