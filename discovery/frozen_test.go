package discovery

import (
	"log/slog"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestFrozenFleetKeepsWorkers: a fleet whose announcement subscription
// stops reading for longer than the TTL (the client process frozen: a
// SIGSTOP, a machine asleep, a paused VM, a long GC stop; here its
// handler is held) while a live worker goes on announcing, does not
// expire the worker when its timer fires: the worker's announcements
// are waiting in the connection, received but not read. The fleet
// expired it, and listed it again only once those were read, so calls
// made meanwhile found no worker.
func TestFrozenFleetKeepsWorkers(t *testing.T) {
	s := natstest.Server(t)
	h, release := gate(t, wire.AnnounceSubject("junk"))
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Interval: 50 * time.Millisecond})
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h), holding: h.stall, TTL: 300 * time.Millisecond, DiscoverWindow: 100 * time.Millisecond})
	natstest.WaitFor(t, "w1 listed", func() bool { return listed(f, "w1") })
	// A message that is no announcement: the subscription's handler logs
	// it, and is held there; w1's announcements queue behind it.
	h.hold(t, natstest.Conn(t, s), []byte("x"))
	natstest.WaitFor(t, "w1's TTL over", func() bool { return h.said("w1", "expired") || h.said("w1", "TTL over") })
	thawed := time.Now()
	release()
	natstest.WaitFor(t, "w1's announcements read", func() bool {
		for _, in := range f.Instances() {
			if in.ID == "w1" && in.LastSeen.After(thawed) {
				return true
			}
		}
		return false
	})
	if h.said("w1", "expired") {
		t.Error("w1 expired while its announcements waited in the connection")
	}
}
