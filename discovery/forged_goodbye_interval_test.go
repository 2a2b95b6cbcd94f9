package discovery

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestForgedGoodbyeIntervalBounded: a goodbye forged off a live worker's
// subject (its run's incarnation and epoch_ms copied, a later seq)
// asking an interval of an hour, followed by an announcement of a
// made-up run of the instance, hid the worker for three hours: its
// messages were of a run ended by a goodbye while another run was
// listed. An announcer's interval does not change within a run, so the
// goodbye of a run listed is remembered for the run's own TTL at most:
// the live worker is listed again with its first message past it.
func TestForgedGoodbyeIntervalBounded(t *testing.T) {
	real := wire.Announcement{Format: 1, Instance: "w1", Incarnation: "r1", EpochMS: 1, Seq: 1, IntervalMS: 2000, Tools: []wire.AnnouncedTool{}}
	const realTTL = DefaultTTLFactor * 2 * time.Second
	forged := real
	forged.Seq, forged.IntervalMS = 1<<63, MaxInterval.Milliseconds()

	s := natstest.Server(t)
	clk := &testClock{}
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), clock: clk.now})
	f.apply(announcementMsg(t, real), clk.now())
	bye := forged
	bye.Goodbye = true
	f.apply(announcementMsg(t, bye), clk.now())
	other := forged
	other.Incarnation, other.Seq = "made-up", 1
	f.apply(announcementMsg(t, other), clk.now())

	clk.advance(realTTL + time.Second)
	next := real
	next.Seq = 2
	f.apply(announcementMsg(t, next), clk.now())
	f.mu.Lock()
	in := f.instances["w1"]
	f.mu.Unlock()
	if in == nil || in.ann.Incarnation != "r1" {
		t.Fatal("after a forged goodbye asking an hour and a made-up run, the live worker's message past its own TTL did not list it")
	}
}
