package discovery

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// gateHandler is a logger that holds the goroutine logging about
// subject gated until open is closed (the fleet logs a malformed
// announcement from its intake goroutine, so the intake waits there), and
// records every other record's message and instance.
type gateHandler struct {
	gated   string
	blocked chan struct{} // closed when a record about gated is being held
	open    chan struct{}
	once    sync.Once
	// gate, when set, holds the first malformed-announcement record about
	// any subject instead, until it returns.
	gate     func()
	gateOnce sync.Once

	mu      sync.Mutex
	records []string // "instance: message" and "subject: message"
}

func (h *gateHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *gateHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *gateHandler) WithGroup(string) slog.Handler            { return h }
func (h *gateHandler) Handle(_ context.Context, r slog.Record) error {
	var subject, inst string
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "subject":
			subject = a.Value.String()
		case "instance":
			inst = a.Value.String()
		}
		return true
	})
	if h.gate != nil && strings.Contains(r.Message, "malformed") {
		h.gateOnce.Do(h.gate)
	}
	if h.gate == nil && subject == h.gated {
		h.once.Do(func() { close(h.blocked) })
		<-h.open
		return nil
	}
	h.mu.Lock()
	h.records = append(h.records, inst+": "+r.Message, subject+": "+r.Message)
	h.mu.Unlock()
	return nil
}

// count is how many records say word.
func (h *gateHandler) count(word string) (n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if strings.HasPrefix(r, ": ") && strings.Contains(r, word) {
			n++ // each record is kept twice, once by instance, once by subject
		}
	}
	return n / 2
}

func (h *gateHandler) said(inst, word string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if strings.HasPrefix(r, inst+": ") && strings.Contains(r, word) {
			return true
		}
	}
	return false
}

// TestBusyFleetKeepsWorker: a fleet whose intake is still busy (decoding
// other announcements, a large one taking long on a loaded machine) when
// a live worker's TTL runs out, with the worker's next announcement
// already received and waiting, does not expire the worker: it announced
// in time, the fleet just has not read it yet. The fleet expired it
// (under extreme load, a worker with 1.2 MB announcements dropped out of
// the view and came back). A worker whose waiting message does not renew
// it (here: one that cannot be read) still goes once it is read.
func TestBusyFleetKeepsWorker(t *testing.T) {
	s := natstest.Server(t)
	blocker := wire.AnnounceSubject("blocker")
	h := &gateHandler{gated: blocker, blocked: make(chan struct{}), open: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(h.open)
		}
	}
	defer release()
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h), DiscoverWindow: 100 * time.Millisecond})
	worker := natstest.Conn(t, s)

	// The intake is held on a malformed announcement (format 0).
	unreadable := []byte{0x81, 0xa1, 'v', 0x00}
	if err := worker.Publish(blocker, unreadable); err != nil {
		t.Fatal(err)
	}
	worker.Flush()
	<-h.blocked

	// The next messages of w1 (its announcement) and w2 (one that cannot
	// be read) arrive and wait for the intake.
	ann := func(id string, seq uint64, interval int64, mark string) wire.Announcement {
		return wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: seq, IntervalMS: interval,
			Tools: []wire.AnnouncedTool{{Name: mark, Description: "x", Group: "basic", Idempotency: "unknown",
				Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}}
	}
	publishAnnouncement(t, worker, ann("w1", 2, 3_600_000, "second"))
	if err := worker.Publish(wire.AnnounceSubject("w2"), unreadable); err != nil {
		t.Fatal(err)
	}
	worker.Flush()
	natstest.WaitFor(t, "the messages held for the intake", func() bool {
		f.inMu.Lock()
		defer f.inMu.Unlock()
		return len(f.latest[wire.AnnounceSubject("w1")]) > 0 && len(f.latest[wire.AnnounceSubject("w2")]) > 0
	})

	// The fleet learns w1 and w2 from earlier messages, answering a
	// discover request (applied at once, not by the intake), with a TTL
	// of 300 ms.
	first := []wire.Announcement{ann("w1", 1, 100, "first"), ann("w2", 1, 100, "other")}
	sub, err := worker.Subscribe(wire.SubjectDiscover, func(m *nats.Msg) {
		for i := range first {
			wire.Respond(worker, m, &first[i])
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	worker.Flush()
	// Discover reads the answers at the end of its window, then waits for
	// the intake to read what arrived: each attempt is left waiting there,
	// and the next one asks again should the answers have come late.
	for attempt := 1; !listed(f, "w1") || !listed(f, "w2"); attempt++ {
		ctx, cancel := context.WithCancel(natstest.Ctx(t))
		discovered := make(chan struct{})
		go func() { defer close(discovered); f.Discover(ctx) }()
		natstest.WaitFor(t, "Discover past its window", func() bool { return h.count("waiting for the announcements") >= attempt })
		cancel()
		<-discovered
	}

	// Their TTL runs out while their next messages wait.
	natstest.WaitFor(t, "the TTLs over", func() bool {
		return (h.said("w1", "expired") || h.said("w1", "waiting")) && (h.said("w2", "expired") || h.said("w2", "waiting"))
	})
	for _, id := range []string{"w1", "w2"} {
		if !listed(f, id) {
			t.Errorf("%s expired while its next message waited for the fleet's busy intake", id)
		}
	}

	// The intake reads them: w1 is renewed, w2 is not, and goes.
	release()
	natstest.WaitFor(t, "w1's waiting announcement applied, w2 gone", func() bool {
		_, ok := f.Tool("second")
		return ok && !listed(f, "w2")
	})
	if !listed(f, "w1") {
		t.Error("w1 dropped after its waiting announcement was read")
	}
}

// TestDiscoverReadsWhatArrived: Discover (and so NewFleet, and every
// listing of a client starting) returns once the announcements that
// arrived within its window have been read, not while they still wait
// for the intake: a worker whose discover answers were used up by a burst
// of starting clients answers the rest by a broadcast, and a large
// announcement takes long to decode; the client listed the fleet without
// that worker's tools.
func TestDiscoverReadsWhatArrived(t *testing.T) {
	s := natstest.Server(t)
	blocker := wire.AnnounceSubject("blocker")
	h := &gateHandler{gated: blocker, blocked: make(chan struct{}), open: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(h.open)
		}
	}
	defer release()
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h)})
	worker := natstest.Conn(t, s)
	if err := worker.Publish(blocker, []byte{0x81, 0xa1, 'v', 0x00}); err != nil {
		t.Fatal(err)
	}
	worker.Flush()
	<-h.blocked
	publishAnnouncement(t, worker, wire.Announcement{Format: 1, Instance: "w1", EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
		Tools: []wire.AnnouncedTool{{Name: "echo", Description: "x", Group: "basic", Idempotency: "unknown",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}})
	worker.Flush()
	natstest.WaitFor(t, "w1's announcement held", func() bool {
		f.inMu.Lock()
		defer f.inMu.Unlock()
		return len(f.latest[wire.AnnounceSubject("w1")]) > 0
	})

	done := make(chan error, 1)
	go func() { done <- f.Discover(natstest.Ctx(t)) }()
	// Discover says it waits for the intake (then the test lets the intake
	// go on), or returns.
	natstest.WaitFor(t, "Discover waiting or returned", func() bool {
		if h.said("", "waiting for the announcements") {
			release()
		}
		select {
		case err := <-done:
			done <- err
			return true
		default:
			return false
		}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !listed(f, "w1") {
		t.Fatal("Discover returned before the announcement received within its window was read")
	}
}

// TestDiscoverKeepsSlowAnswers: answers to a discover request that
// arrived within the window count, however long the fleet takes to read
// them. They were decoded one by one on the inbox subscription, which
// was unsubscribed when the window ended: the answers still queued
// behind a slow one (a loaded machine, large announcements of many
// workers) were dropped, and a starting client listed the fleet without
// those workers.
func TestDiscoverKeepsSlowAnswers(t *testing.T) {
	s := natstest.Server(t)
	nc := natstest.Conn(t, s)
	// The reading of the first answer (unreadable, so logged) is held
	// until the discover request's inbox is unsubscribed.
	var base int
	ready := make(chan struct{})
	h := &gateHandler{gate: func() {
		<-ready
		for nc.NumSubscriptions() > base {
			time.Sleep(time.Millisecond)
		}
	}}
	f := startFleet(t, nc, &FleetOptions{Logger: slog.New(h), DiscoverWindow: 100 * time.Millisecond})
	base = nc.NumSubscriptions()
	close(ready)
	worker := natstest.Conn(t, s)
	w1 := wire.Announcement{Format: 1, Instance: "w1", EpochMS: 1, Seq: 1, IntervalMS: 3_600_000,
		Tools: []wire.AnnouncedTool{{Name: "echo", Description: "x", Group: "basic", Idempotency: "unknown",
			Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}}
	sub, err := worker.Subscribe(wire.SubjectDiscover, func(m *nats.Msg) {
		worker.Publish(m.Reply, []byte{0x81, 0xa1, 'v', 0x00})
		wire.Respond(worker, m, &w1)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	worker.Flush()
	if err := f.Discover(natstest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if !listed(f, "w1") {
		t.Fatal("an answer received within the discover window was dropped, queued behind a slow one")
	}
}
