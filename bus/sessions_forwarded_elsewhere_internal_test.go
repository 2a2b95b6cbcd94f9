package bus

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestForwardedCallOfAMovedSession: c passes a session's call on to a,
// the worker its pin named when c looked; before a reads the pin, the
// session moves to b (a was taken for gone: frozen a moment after it
// answered c's probe), which lives. a ran the call, unpinned: its state
// stayed on a, apart from the session's on b, and the final said nothing
// of it. The call does not run on a now: it ends unavailable, naming b
// as the session's worker (a Go client sends the call's retry there).
func TestForwardedCallOfAMovedSession(t *testing.T) {
	s := natstest.Embedded(t, false)
	ran := map[string]*atomic.Int64{}
	serve := func(instance string) *Worker {
		ran[instance] = &atomic.Int64{}
		return putWorker(t, s, instance, ran[instance])
	}
	serve("a")
	serve("b")
	c := serve("c")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key, err := wire.SessionKey("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.aff.kv.Create(ctx, key, []byte("a")); err != nil {
		t.Fatal(err)
	}
	// The session moves to b after c probed a, before a reads the pin.
	c.aff.beforeForward = func() {
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
	// Sent to c's own subject, as a client that learnt c for the session.
	cl.notePin(toolkit.ToolCall{Name: "put", Session: "s"}, &toolkit.Response{Metadata: map[string]any{wire.MetaSessionWorker: "c"}})
	r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"})
	if n := ran["a"].Load(); n != 0 {
		t.Fatalf("the call ran on a, whose session moved to b: %+v", r)
	}
	if r.Code != toolkit.CodeUnavailable || r.Metadata[wire.MetaSessionWorker] != "b" || !strings.Contains(r.Text(), "worker b") {
		t.Fatalf("final: %+v", r)
	}
	if p := cl.Pin("s"); p != "b" {
		t.Fatalf("the client's pin: %q", p)
	}
	// Sent again, it runs on b.
	if r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"}); r.Text() != "put on b" {
		t.Fatalf("again: %+v", r)
	}
}
