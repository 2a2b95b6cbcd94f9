package bus_test

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A session whose name cannot be a key of the sessions bucket (its key
// is over wire.MaxSessionKeyLen) cannot be pinned: its session-bound
// calls end invalid_input without running, rather than running unpinned
// on whichever worker the queue group picks, each keeping its own state
// and no final saying so. Its stateless calls run as any other. The code
// is the one a group-gated tool's call of the same session gets
// (TestKVStateLongSessionIsInvalidInput): no retry helps, and
// unavailable reads as an outage callers retry.
func TestSessionKeyTooLongIsNotRunUnpinned(t *testing.T) {
	s := natstest.Embedded(t, false)
	for _, name := range []string{"w1", "w2"} {
		affinityWorker(t, s, name)
	}
	c := newClient(t, natstest.Connect(t, s), nil)
	for _, tc := range []struct{ identity, session string }{
		{"", strings.Repeat("a", wire.MaxSessionKeyLen+1)},
		{"", strings.Repeat(".", 769)},
		{"carol", strings.Repeat(".", 766)},
	} {
		cl := c
		if tc.identity != "" {
			cl = newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Identity: tc.identity})
		}
		r := cl.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: tc.session, Input: map[string]any{"value": "v"}})
		if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "session") || r.Metadata[wire.MetaSessionWorker] != nil {
			t.Fatalf("put in a session of %d bytes (identity %q): %+v", len(tc.session), tc.identity, r)
		}
		if r := cl.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Session: tc.session, Input: map[string]any{"text": "x"}}); r.Code != "" || r.Text() != "x" {
			t.Fatalf("echo in a session of %d bytes: %+v", len(tc.session), r)
		}
	}
	// At the bound, the session is pinned as any other.
	long := strings.Repeat("a", wire.MaxSessionKeyLen)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: long, Input: map[string]any{"value": "v"}})
	if r.Code != "" || r.Metadata[wire.MetaSessionWorker] == nil {
		t.Fatalf("put in a session of %d bytes: %+v", len(long), r)
	}
}
