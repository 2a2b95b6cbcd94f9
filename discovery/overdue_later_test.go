package discovery

import (
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
	worker := natstest.Conn(t, s)
	// The fleet learns w2 answering its discover request, with a TTL of
	// 300 ms.
	first := announcement("w2", 1, 100, "echo")
	sub, err := worker.Subscribe(wire.SubjectDiscover, func(m *nats.Msg) { wire.Respond(worker, m, &first) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	worker.Flush()
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h), applying: h.stall, DiscoverWindow: 100 * time.Millisecond})
	if !listed(f, "w2") {
		t.Fatal("w2 not listed after discovery")
	}
	// An unreadable message of w2: the intake is held logging it.
	h.hold(t, worker, unreadable)
	natstest.WaitFor(t, "w2's TTL over while its message is read", func() bool { return h.said("w2", "waiting") })
	// w2's next announcement arrives and waits.
	publishAnnouncement(t, worker, announcement("w2", 2, 3_600_000, "echo"))
	worker.Flush()
	waitHeld(t, f, w2)
	release()
	natstest.WaitFor(t, "w2's next announcement read", func() bool {
		for _, in := range f.Instances() {
			if in.ID == "w2" && in.Interval == time.Hour {
				return true
			}
		}
		return false
	})
	if h.said("w2", "expired") {
		t.Error("w2 expired while its next announcement waited for the intake")
	}
}
