package discovery

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestForgedIntervalBounded: an announcement forged off a live worker's
// subject (its run's incarnation and epoch_ms copied, a later seq)
// asking an interval of an hour made every fleet keep the worker for
// three hours after it died: the fleet counted each message's TTL from
// the interval that message asked. An announcer's interval is the same
// on every message of a run, so a message of a run is kept no longer
// than the first one the fleet heard of it asked: the dead worker goes
// about one TTL of its own after its last message. A forgery heard
// first does not lengthen the real messages' TTL either, and a forgery
// asking a short interval shortens only its own: the run's next message
// is kept for the run's TTL again.
//
// The fleet's TTLs run on timers of the real clock (its test clock only
// stamps arrivals), so the worker announces every 100 ms and the test
// waits for it to go, as TestSilentInstanceExpiresWhileConnected does.
func TestForgedIntervalBounded(t *testing.T) {
	const realMS = 100
	const realTTL = DefaultTTLFactor * realMS * time.Millisecond
	real := wire.Announcement{Format: 1, Instance: "w1", Incarnation: "r1", EpochMS: 1, Seq: 1, IntervalMS: realMS, Tools: []wire.AnnouncedTool{}}
	forged := real
	forged.IntervalMS = MaxInterval.Milliseconds()

	// keptFor is how long the fleet keeps w1 past its last message, as
	// its listing says (w1 gone: none).
	keptFor := func(f *Fleet) (time.Duration, bool) {
		for _, in := range f.Instances() {
			if in.ID == "w1" {
				return in.Expires.Sub(in.LastSeen), true
			}
		}
		return 0, false
	}
	for _, tc := range []struct {
		name  string
		order []wire.Announcement // applied in this order, each a later seq
	}{
		{"forged after the real one", []wire.Announcement{real, forged}},
		{"forged heard first", []wire.Announcement{forged, real}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := natstest.Server(t)
			f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscoverWindow: 100 * time.Millisecond})
			for i, ann := range tc.order {
				ann.Seq = uint64(i + 1)
				applyNow(t, f, ann, time.Now())
			}
			// Gone already on a slow machine: its TTL is 300 ms.
			if d, ok := keptFor(f); ok && d > realTTL {
				t.Errorf("w1 kept %v past its last message, want its own TTL %v at most", d, realTTL)
			}
			// The run goes silent: w1 dies.
			natstest.WaitFor(t, "w1, dead, expired after its own TTL, not the forged one's", func() bool { return !listed(f, "w1") })
		})
	}

	// A forgery asking 1 ms: its own message is kept 3 ms, the run's next
	// one the run's TTL again (the fleet does not keep the smallest
	// interval heard: one message would make the live worker flicker for
	// the rest of its run).
	t.Run("forged short", func(t *testing.T) {
		s := natstest.Server(t)
		clk := &testClock{}
		f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), clock: clk.now})
		long := real
		long.IntervalMS = MaxInterval.Milliseconds()
		applyNow(t, f, long, clk.now())
		short := long
		short.Seq, short.IntervalMS = 2, 1
		applyNow(t, f, short, clk.now())
		next := long
		next.Seq = 3
		applyNow(t, f, next, clk.now())
		if d, ok := keptFor(f); !ok || d != DefaultTTLFactor*MaxInterval {
			t.Errorf("after a forged 1 ms interval, the run's next message keeps w1 for %v (listed: %v), want the run's TTL %v", d, ok, DefaultTTLFactor*MaxInterval)
		}
	})
}
