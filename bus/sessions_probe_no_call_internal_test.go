package bus

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestProbeOfAForwardedCallNamesNoCall: a, passed a call on by c, finds
// its session pinned to b meanwhile and probes b to learn whether b
// lives; b does, and a answers the call unavailable: it is passed on no
// further. Its probe named the call all the same, and b noted it as one
// coming: a stop of b in the next 2 s waited for it in vain (forwardWait)
// before it drained tools.pinned.b.>. Such a probe now names no call,
// and b waits for none.
func TestProbeOfAForwardedCallNamesNoCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	workers := map[string]*Worker{}
	for _, instance := range []string{"a", "b", "c"} {
		workers[instance] = putWorker(t, s, instance, nil)
	}
	b, c := workers["b"], workers["c"]
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
	cl.notePin(toolkit.ToolCall{Name: "put", Session: "s"}, &toolkit.Response{Metadata: map[string]any{wire.MetaSessionWorker: "c"}})
	if r := cl.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"}); r.Code != toolkit.CodeUnavailable || r.Metadata[wire.MetaSessionWorker] != "b" {
		t.Fatalf("final: %+v", r)
	}
	b.aff.mu.Lock()
	expected, blind := len(b.aff.expected), !b.aff.blind.IsZero()
	b.aff.mu.Unlock()
	if expected != 0 || blind {
		t.Fatalf("b waits at its stop for a call no one passes on (%d noted, a probe naming none: %v)", expected, blind)
	}
}
