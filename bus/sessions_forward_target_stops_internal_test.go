package bus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestForwardToAWorkerThatStoppedMeanwhile: c passes a session's call on
// to a, the session's worker, which answered c's probe and then stopped
// gracefully (an operator's rolling restart) before the call reached its
// subject: nothing took the call, and its caller, hearing nothing, ended
// it worker_lost at its stall timeout, though no worker had been lost.
// A stopping worker now takes the calls it answered probes for before it
// drains: the call runs once, on a, where the session's state is.
func TestForwardToAWorkerThatStoppedMeanwhile(t *testing.T) {
	s, a, c, ran := pinnedToA(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// a answered c's probe; its stop is under way (no probe answered any
	// more, the fleet told) before the call is passed on: it drained its
	// subscriptions, or waits for the call.
	stopped := make(chan error, 1)
	c.aff.beforeForward = func() {
		go func() { stopped <- a.Stop(ctx) }()
		natstest.WaitFor(t, "a's stop under way", func() bool {
			return !a.aff.subs[0].IsValid() && (!a.aff.subs[1].IsValid() || a.aff.waitingForwards())
		})
	}
	cl, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	// Sent to c's own subject, as a client that learnt c for the session.
	cl.notePin(toolkit.ToolCall{Name: "put", Session: "s"}, &toolkit.Response{Metadata: map[string]any{wire.MetaSessionWorker: "c"}})
	r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"})
	if r.State != toolkit.StateSuccess || r.Text() == "" {
		t.Fatalf("final: %s %s %q", r.State, r.Code, r.Text())
	}
	// On a, where the session's state is: its stop answers a call
	// already on its way.
	if na, nc := ran["a"].Load(), ran["c"].Load(); na != 1 || nc != 0 {
		t.Fatalf("ran %d times on a and %d on c, want once on a", na, nc)
	}
	if r.Metadata[wire.MetaSessionWorker] != "a" || r.Metadata[wire.MetaSessionMovedFrom] != nil {
		t.Fatalf("metadata: %v", r.Metadata)
	}
	if err := <-stopped; err != nil {
		t.Fatalf("a's stop: %v", err)
	}
}

// TestForwardToAWorkerStoppedPastGrace: as above, but a's stop begins
// with its grace already over (worker --grace 0, a second signal). It
// drained tools.pinned.a.> at once, so the call passed on to it after it
// had answered the probe reached no one and its caller ended it
// worker_lost at its stall timeout. The stop waits for the calls it was
// probed for past its grace too (within stopFlushTimeout); it does not
// run them but passes them on to the tool's queue group, where c takes
// the session over and runs the call.
func TestForwardToAWorkerStoppedPastGrace(t *testing.T) {
	s, a, c, ran := pinnedToA(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	over, stop := context.WithCancel(context.Background())
	stop()
	stopped := make(chan error, 1)
	c.aff.beforeForward = func() {
		go func() { stopped <- a.Stop(over) }()
		natstest.WaitFor(t, "a's stop under way", func() bool {
			return !a.aff.subs[0].IsValid() && (!a.aff.subs[1].IsValid() || a.aff.waitingForwards())
		})
	}
	cl, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	cl.notePin(toolkit.ToolCall{Name: "put", Session: "s"}, &toolkit.Response{Metadata: map[string]any{wire.MetaSessionWorker: "c"}})
	r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"})
	if r.State != toolkit.StateSuccess || r.Text() == "" {
		t.Fatalf("final: %s %s %q", r.State, r.Code, r.Text())
	}
	if na, nc := ran["a"].Load(), ran["c"].Load(); na != 0 || nc != 1 {
		t.Fatalf("ran %d times on a and %d on c, want once on c", na, nc)
	}
	if r.Metadata[wire.MetaSessionWorker] != "c" || r.Metadata[wire.MetaSessionMovedFrom] != "a" {
		t.Fatalf("metadata: %v, want the session moved from a to c", r.Metadata)
	}
	if err := <-stopped; err == nil {
		t.Fatal("a's stop past its grace returned nil")
	}
}

// pinnedToA starts workers a and c serving the session-bound tool put,
// each counting its runs, and pins session "s" to a.
func pinnedToA(t *testing.T) (*embedded.Server, *Worker, *Worker, map[string]*atomic.Int64) {
	s := natstest.Embedded(t, false)
	ran := map[string]*atomic.Int64{}
	serve := func(instance string) *Worker {
		ran[instance] = &atomic.Int64{}
		return putWorker(t, s, instance, ran[instance])
	}
	a := serve("a")
	c := serve("c")
	key, err := wire.SessionKey("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.aff.kv.Create(natstest.Ctx(t), key, []byte("a")); err != nil {
		t.Fatal(err)
	}
	return s, a, c, ran
}
