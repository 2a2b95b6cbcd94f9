package discovery

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestOverdueKeptForLaterMessage: an instance whose TTL ran out while a
// message of it waited for the intake, a message that does not renew it
// (unreadable here), is not dropped once that message is read while a
// later one of it waits: that one may renew it. It was dropped, and
// listed again once the later one was read.
func TestOverdueKeptForLaterMessage(t *testing.T) {
	s := natstest.Server(t)
	w2 := wire.AnnounceSubject("w2")
	h, release := gate(t, w2)
	clk := &testClock{}
	// The intake is held taking w2's unreadable message; the test's own
	// reads of w2's announcements go on.
	stall := func(m *nats.Msg) {
		if bytes.Equal(m.Data, unreadable) {
			h.stall(m)
		}
	}
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h), applying: stall, clock: clk.now})
	worker := natstest.Conn(t, s)
	// An unreadable message of w2: the intake is held taking it.
	h.hold(t, worker, unreadable)
	// Meanwhile the fleet learns w2 from its announcement (every hour: a
	// TTL of 3 h), read outside the intake as a discover answer is, once
	// the fleet's clock is past its TTL: its TTL is over while its
	// message is read.
	firstAt := clk.now()
	clk.advance(DefaultTTLFactor*time.Hour + time.Second)
	applyNow(t, f, announcement("w2", 1, 3_600_000, "echo"), firstAt)
	natstest.WaitFor(t, "w2's TTL over while its message is read", func() bool { return h.said("w2", "waiting") })
	if !listed(f, "w2") {
		t.Fatal("w2 expired while its message was read")
	}
	// w2's next announcement (the same run and interval) arrives and
	// waits.
	publishAnnouncement(t, worker, announcement("w2", 2, 3_600_000, "next"))
	worker.Flush()
	waitHeld(t, f, w2)
	release()
	natstest.WaitFor(t, "w2's next announcement read", func() bool {
		_, ok := f.Tool("next")
		return ok
	})
	if h.said("w2", "expired") {
		t.Error("w2 expired while its next announcement waited for the intake")
	}
}
