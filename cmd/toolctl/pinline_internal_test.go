package main

import (
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
)

// TestPinLine: call -v says where the session is pinned, and a session
// whose worker was started again under its instance id is not said to
// have moved from a worker that is gone to that same worker.
func TestPinLine(t *testing.T) {
	for _, c := range []struct {
		session string
		meta    map[string]any
		want    string
	}{
		{"s1", map[string]any{wire.MetaWorker: "w1"}, ""},
		{"s1", map[string]any{wire.MetaSessionWorker: "w1"}, "toolctl: session s1 is pinned to worker w1"},
		{"", map[string]any{wire.MetaSessionWorker: "w1"}, "toolctl: session (default) is pinned to worker w1"},
		{"s1", map[string]any{wire.MetaSessionWorker: "w1", wire.MetaSessionMovedFrom: "w2"}, "toolctl: session s1 moved from worker w2 (gone) to worker w1"},
		{"s1", map[string]any{wire.MetaSessionWorker: "w2", wire.MetaSessionMovedFrom: "w2"}, "toolctl: session s1 is pinned to worker w2, started again since its last call there"},
	} {
		if got := pinLine(c.session, c.meta); got != c.want {
			t.Errorf("pinLine(%q, %v) = %q, want %q", c.session, c.meta, got, c.want)
		}
	}
}
