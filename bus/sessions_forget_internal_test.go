package bus

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestForgetDuringRoute: a worker passes a call of a session on with
// Toolbus-Pin-Lost (forget) while another call of the same session (a
// model's parallel tool calls) reads the pin, which still names this
// worker: that call runs here, but its read must not restore the memory
// of holding the session that forget ended, or the session's next calls
// are served here from memory (trust) while the worker that got the
// passed-on call has taken the session over.
func TestForgetDuringRoute(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	w := serve(t, nc, toolkit.New(nil), &WorkerOptions{Instance: "a", Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
	a := w.aff
	in := &incoming{header: nats.Header{}}
	if p, to, _ := a.route(in, "s"); !p.here || to != "" {
		t.Fatalf("claim: %+v, %q", p, to)
	}
	a.forget("s") // the next route reads the pin
	a.afterRead = func() { a.forget("s") }
	if p, to, _ := a.route(in, "s"); !p.here || to != "" {
		t.Fatalf("the call read while the pin names a: %+v, %q; want it run here", p, to)
	}
	reads := 0
	a.afterRead = func() { reads++ }
	a.route(in, "s")
	if reads == 0 {
		t.Fatal("the session's next call was served from memory of holding it; want its pin read (a gave the session up)")
	}
}

// TestGivenUpSessionReadAfterwardIsNotHeld: a worker passes a call of a
// session on with Toolbus-Pin-Lost naming itself (forget: a tool of the
// session it does not serve, a model's parallel calls), and another call
// of the session reads the pin after that, before the worker that got
// the passed-on call took the session over: the pin still names this
// worker, so the call runs here, but that read was taken as ground to
// hold the session again. The other worker then took it over without a
// probe (Toolbus-Pin-Lost), and the session's next calls here were
// served from memory (trust) beside it, each keeping its own state.
func TestGivenUpSessionReadAfterwardIsNotHeld(t *testing.T) {
	s := natstest.Embedded(t, false)
	serve := func(instance string, probe time.Duration) *affinity {
		nc := natstest.Connect(t, s)
		w := serve(t, nc, toolkit.New(nil), &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc), ProbeTimeout: probe}})
		return w.aff
	}
	// a trusts its memory of holding a session for half its probe
	// timeout: long here, so that the memory is fresh throughout.
	a, b := serve("a", time.Minute), serve("b", 0)
	in := &incoming{header: nats.Header{}}
	if p, to, _ := a.route(in, "s"); !p.here || to != "" {
		t.Fatalf("claim: %+v, %q", p, to)
	}
	a.forget("s") // a call of the session passed on with Toolbus-Pin-Lost: a
	if p, to, _ := a.route(in, "s"); !p.here || to != "" {
		t.Fatalf("a call read while the pin still names a: %+v, %q; want it run here", p, to)
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
