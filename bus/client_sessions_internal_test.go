package bus

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

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
		_, since := c.sessionRevision(session)
		c.noteRevision(toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session},
			&toolkit.Response{State: toolkit.StateSuccess, Metadata: map[string]any{toolkit.MetaGroupsRevision: uint64(i)}}, since)
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

// TestNoteRevisionOrder: a reset_tools answer replaces the revision noted
// before its call was made, even a higher one (the bucket was made again,
// which also forgets the other sessions' higher revisions noted before);
// against one noted while it ran, the higher wins.
func TestNoteRevisionOrder(t *testing.T) {
	s := natstest.Embedded(t, false)
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	note := func(session string, rev, since uint64) {
		c.noteRevision(toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session},
			&toolkit.Response{State: toolkit.StateSuccess, Metadata: map[string]any{toolkit.MetaGroupsRevision: rev}}, since)
	}
	clock := func() uint64 { _, at := c.sessionRevision(""); return at }

	note("low", 5, clock())
	note("s", 10, clock())
	since := clock() // a reset_tools of s is made
	note("s", 12, clock())
	note("s", 11, since) // and answered after another one of s
	if got := c.Revision("s"); got != 12 {
		t.Fatalf("s: revision %d after concurrent reset_tools answered 12 and 11, want 12", got)
	}
	if got := c.Revision("low"); got != 5 {
		t.Fatalf("low: revision %d, want 5 kept", got)
	}

	note("high", 40, clock())
	note("s", 2, clock()) // the bucket was made again
	if got := c.Revision("s"); got != 2 {
		t.Fatalf("s: revision %d after reset_tools into a new bucket answered 2, want 2", got)
	}
	if got := c.Revision("high"); got != 0 {
		t.Fatalf("high: revision %d of the old bucket kept", got)
	}
	if got := c.Revision("low"); got != 0 {
		t.Fatalf("low: revision %d of the old bucket kept", got)
	}
}

// TestClientBoundToolsBounded: the client remembered every tool name a
// final with session_worker came back for: a worker subscribed to
// tools.call.> answering every call so grew a long-running client (a
// gateway whose users name tools) by each name its users tried. It
// remembers at most maxBoundTools.
func TestClientBoundToolsBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	hostile := natstest.Connect(t, s)
	if _, err := hostile.Subscribe(wire.SubjectCallPrefix+">", func(m *nats.Msg) {
		var req wire.Request
		if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &req); err != nil {
			return
		}
		r := toolkit.Final(req.ID, "", "")
		r.Metadata = map[string]any{wire.MetaSessionWorker: "evil"}
		b, _ := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: req.ID, Seq: 1, Final: r})
		hostile.Publish(m.Reply, b)
	}); err != nil {
		t.Fatal(err)
	}
	hostile.Flush()
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := maxBoundTools + maxBoundTools/4
	for i := range n {
		c.Invoke(t.Context(), toolkit.ToolCall{Name: "made-up-" + strconv.Itoa(i)})
	}
	c.mu.Lock()
	got := len(c.bound)
	c.mu.Unlock()
	t.Logf("%d calls of made-up tools: %d remembered as session-bound", n, got)
	if got > maxBoundTools {
		t.Fatalf("the client remembers %d session-bound tools after %d calls of made-up names, want at most %d", got, n, maxBoundTools)
	}
}

// The tools a client remembers to have a durable consumer are bounded:
// workers may make consumers of any name, and callers may try any name.
func TestConsumersSeenBounded(t *testing.T) {
	var s consumersSeen
	for i := range 3 * maxConsumersSeen {
		s.add("tool" + strconv.Itoa(i))
	}
	n := 0
	s.tools.Range(func(any, any) bool { n++; return true })
	if n > maxConsumersSeen || int(s.n.Load()) != n {
		t.Errorf("%d tools remembered, counted %d; at most %d", n, s.n.Load(), maxConsumersSeen)
	}
	s.add("tool0")
	if _, ok := s.tools.Load("tool0"); !ok {
		t.Error("a tool just added is not remembered")
	}
}
