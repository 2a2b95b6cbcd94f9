package bus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// unansweredUpdate is a sessions bucket whose next update is stored but
// goes unanswered (its answer dropped by a stepdown), after then ran.
type unansweredUpdate struct {
	jetstream.KeyValue
	armed atomic.Bool
	then  func()
}

func (b *unansweredUpdate) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	rev, err := b.KeyValue.Update(ctx, key, value, last)
	if err != nil || !b.armed.CompareAndSwap(true, false) {
		return rev, err
	}
	b.then()
	return 0, context.DeadlineExceeded
}

// TestGivenUpDuringUnansweredTakeOverIsNotHeld: a worker takes over a
// session whose worker is gone; the write is stored but its answer is
// lost, and meanwhile the worker gives the session up (a call of it
// passed on with Toolbus-Pin-Lost). Its next read finds the pin its own
// through that write, made before the give-up, which is no ground to
// hold the session: it was held as though written after, and once the
// worker the passed-on call reached took the session over, the
// session's next call here was served from memory beside it.
func TestGivenUpDuringUnansweredTakeOverIsNotHeld(t *testing.T) {
	s := natstest.Embedded(t, false)
	serve := func(instance string, probe time.Duration) *affinity {
		nc := natstest.Connect(t, s)
		w := serve(t, nc, toolkit.New(nil), &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc), ProbeTimeout: probe}})
		return w.aff
	}
	// a trusts its memory of holding a session for half its probe
	// timeout: long here, so that the memory is fresh throughout.
	a, b := serve("a", time.Minute), serve("b", 0)
	key, err := wire.SessionKey("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.kv.Put(natstest.Ctx(t), key, []byte("gone")); err != nil {
		t.Fatal(err)
	}
	bucket := &unansweredUpdate{KeyValue: a.kv, then: func() { a.forget("s") }}
	bucket.armed.Store(true)
	a.kv = bucket
	in := &incoming{header: nats.Header{}}
	if p, to, _ := a.route(in, "s"); !p.here || to != "" || p.movedFrom != "gone" {
		t.Fatalf("the take-over: %+v, %q; want the session moved here from gone", p, to)
	}
	if bucket.armed.Load() {
		t.Fatal("the take-over's write was not made")
	}
	// The passed-on call reaches b, which takes the session over.
	lost := &incoming{header: nats.Header{wire.HeaderPinLost: []string{"a"}}}
	if p, to, _ := b.route(lost, "s"); !p.here || to != "" || p.movedFrom != "a" {
		t.Fatalf("the passed-on call on b: %+v, %q; want the session taken over", p, to)
	}
	if p, to, _ := a.route(in, "s"); p.here || to != "b" {
		t.Fatalf("the session's next call on a: %+v, %q; want it passed on to b, which holds the session", p, to)
	}
}
