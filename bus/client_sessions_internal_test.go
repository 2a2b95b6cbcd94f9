package bus

import (
	"strconv"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestClientSessionMemoryBounded: a client serving more sessions than
// it remembers (an agent gateway over millions of sessions) keeps at
// most the cap of revisions and pins, and the recent sessions keep theirs.
func TestClientSessionMemoryBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	const limit = 64
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{MaxSessions: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const sessions = 10 * limit
	for i := 1; i <= sessions; i++ {
		session := "s" + strconv.Itoa(i)
		c.noteRevision(toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session},
			&toolkit.Response{State: toolkit.StateSuccess, Metadata: map[string]any{toolkit.MetaGroupsRevision: uint64(i)}})
		c.notePin(toolkit.ToolCall{Name: "bound", Session: session},
			&toolkit.Response{State: toolkit.StateSuccess, Metadata: map[string]any{wire.MetaSessionWorker: "w" + strconv.Itoa(i%7)}})
		if i%(limit/4) == 0 {
			c.Revision("s1") // a session used again now and then stays
		}
	}
	c.mu.Lock()
	revs, pins := c.revs.len(), c.pins.len()
	c.mu.Unlock()
	if revs > limit || pins > limit {
		t.Fatalf("the client remembers %d revisions and %d pins, want at most %d", revs, pins, limit)
	}
	for i := sessions - limit/2; i <= sessions; i++ {
		session := "s" + strconv.Itoa(i)
		if got := c.Revision(session); got != uint64(i) {
			t.Fatalf("recent session %s: revision %d, want %d", session, got, i)
		}
		if got, want := c.Pin(session), "w"+strconv.Itoa(i%7); got != want {
			t.Fatalf("recent session %s: pin %q, want %q", session, got, want)
		}
	}
	if got := c.Revision("s1"); got != 1 {
		t.Fatalf("a session used all along: revision %d, want 1", got)
	}
}

// TestLRU: the least recently used entry goes first; reading an entry
// (get, not peek) keeps it.
func TestLRU(t *testing.T) {
	l := newLRU[int](3)
	l.put("a", 1)
	l.put("b", 2)
	l.put("c", 3)
	l.get("a")
	l.peek("b")
	l.put("d", 4) // forgets b
	if _, ok := l.peek("b"); ok {
		t.Fatal("b was kept, the least recently used")
	}
	l.put("a", 10) // an update, nothing forgotten
	for k, want := range map[string]int{"a": 10, "c": 3, "d": 4} {
		if got, ok := l.peek(k); !ok || got != want {
			t.Fatalf("%s: %d, %v; want %d", k, got, ok, want)
		}
	}
	l.delete("c")
	if l.len() != 2 {
		t.Fatalf("len %d, want 2", l.len())
	}
}
