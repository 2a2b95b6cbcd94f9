package bus

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionPinRenewedWithClockBehind: a worker whose clock is behind
// the server's (a VM's, by a minute) renews its pin once half the TTL
// has passed since it wrote it, as any worker does. The pin's age was
// the worker's clock less the server's stamp of the pin, so behind by
// half the TTL or more it never found its pin old enough: the pin
// expired a TTL after its claim however often the session was used, and
// the session's next call reaching another worker claimed it there,
// apart from its state, with nothing saying it moved.
func TestSessionPinRenewedWithClockBehind(t *testing.T) {
	const ttl = 10 * time.Second
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	w := serve(t, nc, toolkit.New(nil), &WorkerOptions{Instance: "a",
		Sessions: &SessionsOptions{JetStream: js, TTL: ttl, ProbeTimeout: 200 * time.Millisecond}})
	a := w.aff
	a.now = func() time.Time { return time.Now().Add(-time.Minute) }
	b, err := js.KeyValue(natstest.Ctx(t), wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	in := &incoming{header: nats.Header{}}
	if p, to, _ := a.route(in, "s"); !p.here || to != "" {
		t.Fatalf("claim: %+v, %q", p, to)
	}
	e0, err := b.Get(natstest.Ctx(t), "s")
	if err != nil || string(e0.Value()) != "a" {
		t.Fatalf("the claimed pin: %v, %v", e0, err)
	}
	// Past half the TTL since the claim (this process's clock is the
	// embedded server's), and so past the worker's trust in its memory
	// of holding the session: the next call reads the pin and renews it.
	natstest.WaitFor(t, "half the pin's TTL to pass", func() bool { return time.Since(e0.Created()) > ttl/2 })
	if p, to, _ := a.route(in, "s"); !p.here || to != "" {
		t.Fatalf("the session's call past half the TTL: %+v, %q", p, to)
	}
	e1, err := b.Get(natstest.Ctx(t), "s")
	if err != nil || string(e1.Value()) != "a" || e1.Revision() == e0.Revision() {
		t.Fatalf("the pin after a call past half its TTL: %v, %v; want it renewed (a revision after %d naming a)", e1, err, e0.Revision())
	}
}
