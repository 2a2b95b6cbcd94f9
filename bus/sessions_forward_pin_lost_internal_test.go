package bus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestForwardedPinLostIsNotHonouredAgain: a call carries
// Toolbus-Pin-Lost: b from its first hop (a client's stale pin sent it to
// b, which lacked the tool for a moment, a reload, and passed it on
// giving the session up). c, which got it through the queue group, found
// the session pinned to a, which answered its probe, and passed the call
// on to a. Before a read the pin, the session moved to b (a was taken for
// gone: frozen a moment after it answered c's probe), which lives and
// serves it. The header went on with the call, and a took it for news
// of b: a took the session over from the live b without a probe, ran the
// call there, and said the session moved from b "which is gone". A
// Toolbus-Pin-Lost is the evidence of the call's hop that had it, used
// by the worker that passed the call on: the call passed on does not
// carry it. a probes b, finds it live, and answers the call unavailable,
// naming b, where the session stays.
func TestForwardedPinLostIsNotHonouredAgain(t *testing.T) {
	s := natstest.Embedded(t, false)
	ran := map[string]*atomic.Int64{}
	put := func(instance string) *toolkit.Tool { return putTool(instance, ran[instance]) }
	tks := map[string]*toolkit.Toolkit{}
	serve := func(instance string, withPut bool) *Worker {
		ran[instance] = &atomic.Int64{}
		tk := toolkit.New(nil)
		if withPut {
			if err := tk.Add(put(instance), toolkit.SessionBound()); err != nil {
				t.Fatal(err)
			}
		}
		tks[instance] = tk
		nc := natstest.Connect(t, s)
		return serve(t, nc, tk, &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
	}
	// a and b are reloading put (it is back on both before the call
	// reaches a); only c takes its calls from the queue group meanwhile.
	serve("a", false)
	serve("b", false)
	c := serve("c", true)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := wire.SessionKey("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.aff.kv.Create(ctx, key, []byte("a")); err != nil {
		t.Fatal(err)
	}
	var forwards atomic.Int64
	c.aff.beforeForward = func() {
		forwards.Add(1)
		for _, w := range []string{"a", "b"} {
			if err := tks[w].Add(put(w), toolkit.SessionBound()); err != nil {
				t.Error(err)
			}
		}
		// The session moves to b after c probed a, before a reads the pin.
		e, err := c.aff.kv.Get(ctx, key)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := c.aff.kv.Update(ctx, key, []byte("b"), e.Revision()); err != nil {
			t.Error(err)
		}
	}
	cl, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	// Sent to b's own subject, as a client that learnt b for the session.
	cl.notePin(toolkit.ToolCall{Name: "put", Session: "s"}, &toolkit.Response{Metadata: map[string]any{wire.MetaSessionWorker: "b"}})
	r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"})
	if forwards.Load() != 1 {
		t.Fatalf("c passed the call on %d times, want once: %+v", forwards.Load(), r)
	}
	if n := ran["a"].Load(); n != 0 {
		t.Fatalf("the call ran on a, which took the session over from the live b: %s %s %q %v", r.State, r.Code, r.Text(), r.Metadata)
	}
	if r.Code != toolkit.CodeUnavailable || r.Metadata[wire.MetaSessionWorker] != "b" {
		t.Fatalf("final: %s %s %q %v", r.State, r.Code, r.Text(), r.Metadata)
	}
	e, err := c.aff.kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value()) != "b" {
		t.Fatalf("the session's pin names %q, want b", e.Value())
	}
	// Sent again, it runs on b, which holds the session.
	if r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"}); r.Text() != "put on b" || r.Metadata[wire.MetaSessionMovedFrom] != nil {
		t.Fatalf("again: %s %s %q %v", r.State, r.Code, r.Text(), r.Metadata)
	}
}

// TestPinLostOwnerWritesMeanwhile: a call reaches y with
// Toolbus-Pin-Lost: x (its client's publish to x found no responders: x
// was reconnecting), and y reads the pin naming x; before y's take-over
// is stored, x rewrites its pin (it renews it: a call of the session
// runs on it), so y's compare-and-set loses. x's write is later news than
// the client's: x lives. y read the pin again, found it naming x, and
// took the session over from it without a probe all the same. After a
// lost take-over, the pin is probed as any other worker's.
func TestPinLostOwnerWritesMeanwhile(t *testing.T) {
	x, y, key := pinPair(t)
	if p, to, _ := x.route(&incoming{header: nats.Header{}}, "s"); !p.here || to != "" {
		t.Fatalf("claim: %+v, %q", p, to)
	}
	lostToX(t, x, y, key) // x renews its pin
}

// TestPinLostOwnerTakesOverDuringRenewal: a call reaches y with
// Toolbus-Pin-Lost: x (its client's publish to x found no responders,
// x reconnecting), and y finds the session pinned to itself, its pin
// due for renewal. Before y's renewal is stored, x takes the session
// over (x, alive, had a call of it from a client that still named x), so
// y's compare-and-set loses. x's write is later news than the client's:
// x lives. y read the pin again, found it naming x, and took the session
// over from it without a probe. After any lost write the pin is probed
// as any other worker's.
func TestPinLostOwnerTakesOverDuringRenewal(t *testing.T) {
	x, y, key := pinPair(t)
	if p, to, _ := y.route(&incoming{header: nats.Header{}}, "s"); !p.here || to != "" {
		t.Fatalf("claim: %+v, %q", p, to)
	}
	// Half its TTL on, the pin is due for renewal when y reads it next
	// (past y's trust in its memory of holding the session).
	y.now = func() time.Time { return time.Now().Add(y.pinTTL()) }
	y.mu.Lock()
	clear(y.owned)
	y.mu.Unlock()
	lostToX(t, x, y, key) // x takes the session over
}

// pinPair starts workers x and y sharing session pins on an embedded
// server, and returns their affinities and session s's pin key.
func pinPair(t *testing.T) (x, y *affinity, key string) {
	t.Helper()
	s := natstest.Embedded(t, false)
	start := func(instance string) *affinity {
		nc := natstest.Connect(t, s)
		return serve(t, nc, toolkit.New(nil), &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}}).aff
	}
	key, err := wire.SessionKey("s")
	if err != nil {
		t.Fatal(err)
	}
	return start("x"), start("y"), key
}

// lostToX has x write session s's pin as y first reads it, and y route
// a call with Toolbus-Pin-Lost: x: y's compare-and-set loses to x's
// write, and y must pass the call on to x (probed, alive), the pin
// naming x still.
func lostToX(t *testing.T, x, y *affinity, key string) {
	t.Helper()
	ctx := natstest.Ctx(t)
	reads := 0
	y.afterRead = func() {
		if reads++; reads != 1 {
			return
		}
		e, err := x.kv.Get(ctx, key)
		if err != nil {
			t.Error(err)
			return
		}
		if err := x.pinHere(ctx, key, e.Revision()); err != nil {
			t.Error(err)
		}
	}
	lost := &incoming{reply: "_INBOX.caller", header: nats.Header{wire.HeaderPinLost: []string{"x"}}}
	if p, to, _ := y.route(lost, "s"); p.here || to != "x" {
		t.Fatalf("y: %+v, %q; want the call passed on to x, which wrote the pin after the client found it gone", p, to)
	}
	e, err := x.kv.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value()) != "x" {
		t.Fatalf("the pin names %q, want x", e.Value())
	}
}
