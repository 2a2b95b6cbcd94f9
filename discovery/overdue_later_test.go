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
	h := &gateHandler{gated: w2, blocked: make(chan struct{}), open: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(h.open)
		}
	}
	defer release()
	worker := natstest.Conn(t, s)
	ann := func(seq uint64, interval int64) wire.Announcement {
		return wire.Announcement{Format: 1, Instance: "w2", EpochMS: 1, Seq: seq, IntervalMS: interval,
			Tools: []wire.AnnouncedTool{{Name: "echo", Description: "x", Group: "basic", Idempotency: "unknown",
				Parameters: map[string]any{"type": "object", "properties": map[string]any{}}}}}
	}
	// The fleet learns w2 answering its discover request, with a TTL of
	// 300 ms.
	first := ann(1, 100)
	sub, err := worker.Subscribe(wire.SubjectDiscover, func(m *nats.Msg) { wire.Respond(worker, m, &first) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	worker.Flush()
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(h), DiscoverWindow: 100 * time.Millisecond})
	if !listed(f, "w2") {
		t.Fatal("w2 not listed after discovery")
	}
	// An unreadable message of w2: the intake is held logging it.
	if err := worker.Publish(w2, []byte{0x81, 0xa1, 'v', 0x00}); err != nil {
		t.Fatal(err)
	}
	worker.Flush()
	<-h.blocked
	natstest.WaitFor(t, "w2's TTL over while its message is read", func() bool { return h.said("w2", "waiting") })
	// w2's next announcement arrives and waits.
	publishAnnouncement(t, worker, ann(2, 3_600_000))
	worker.Flush()
	natstest.WaitFor(t, "w2's next announcement held", func() bool {
		f.inMu.Lock()
		defer f.inMu.Unlock()
		return len(f.latest[w2]) > 0
	})
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
