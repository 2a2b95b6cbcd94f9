package bus

import (
	"testing"

	"github.com/nats-io/nats.go"

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
	w, err := Serve(nc, toolkit.New(nil), &WorkerOptions{Instance: "a", Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(natstest.Ctx(t)) })
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
