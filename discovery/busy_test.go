package discovery

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

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
	h, release := gate(t, wire.AnnounceSubject("blocker"))
	clk := &testClock{}
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h), applying: h.stall, clock: clk.now})
	worker := natstest.Conn(t, s)

	// w1 and w2 announce every hour (a TTL of 3 h); the fleet reads
	// those announcements only once its clock is past their TTL.
	firstAt := clk.now()
	clk.advance(DefaultTTLFactor*time.Hour + time.Second)

	// The intake is held on a malformed announcement (format 0).
	h.hold(t, worker, unreadable)

	// The next messages of w1 (its announcement, of the same run and
	// interval) and w2 (one that cannot be read) arrive and wait for the
	// intake.
	publishAnnouncement(t, worker, announcement("w1", 2, 3_600_000, "second"))
	if err := worker.Publish(wire.AnnounceSubject("w2"), unreadable); err != nil {
		t.Fatal(err)
	}
	worker.Flush()
	waitHeld(t, f, wire.AnnounceSubject("w1"), wire.AnnounceSubject("w2"))

	// The fleet learns w1 and w2 from their first messages, read outside
	// the intake as a discover answer is: their TTL has run out.
	for _, ann := range []wire.Announcement{announcement("w1", 1, 3_600_000, "first"), announcement("w2", 1, 3_600_000, "other")} {
		applyNow(t, f, ann, firstAt)
	}

	// Their TTL is over while their next messages wait.
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
	h, release := gate(t, wire.AnnounceSubject("blocker"))
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h), applying: h.stall})
	worker := natstest.Conn(t, s)
	h.hold(t, worker, unreadable)
	publishAnnouncement(t, worker, announcement("w1", 1, 3_600_000, "echo"))
	worker.Flush()
	waitHeld(t, f, wire.AnnounceSubject("w1"))

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
	// The reading of the first answer (unreadable) is held until the
	// discover request's inbox is unsubscribed.
	var base int
	ready := make(chan struct{})
	var once sync.Once
	slow := func(m *nats.Msg) {
		if bytes.Equal(m.Data, unreadable) {
			once.Do(func() {
				<-ready
				for nc.NumSubscriptions() > base {
					time.Sleep(time.Millisecond)
				}
			})
		}
	}
	f := startFleet(t, nc, &FleetOptions{applying: slow, DiscoverWindow: 100 * time.Millisecond})
	base = nc.NumSubscriptions()
	close(ready)
	worker := natstest.Conn(t, s)
	w1 := announcement("w1", 1, 3_600_000, "echo")
	sub, err := worker.Subscribe(wire.SubjectDiscover, func(m *nats.Msg) {
		worker.Publish(m.Reply, unreadable)
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
