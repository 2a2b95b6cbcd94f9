package discovery

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// testClock is a fleet's clock that a test moves on.
type testClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// announcedAfter waits until a has published a message after its message
// number seq, then until f has read what a's connection published by
// then.
func announcedAfter(t *testing.T, f *Fleet, a *Announcer, nc *nats.Conn, seq uint64) {
	t.Helper()
	natstest.WaitFor(t, "the worker's next announcement", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.seq > seq // published under a.mu with its seq
	})
	readThrough(t, f, nc)
}

// TestForgedSeqShadowsLittle: a message forged off a live worker's
// subject (its run's incarnation and epoch_ms, any publisher may copy
// them) with a huge seq (2^63) made every fleet ignore the worker's real
// messages (their seqs were lower) until the forged entry's TTL: the
// worker listed without its tools, its new tools unseen, its goodbye
// ignored. The run's messages leave one connection in seq order, so one
// that arrives well after the forged one is the run going on: the fleet
// applies it.
func TestForgedSeqShadowsLittle(t *testing.T) {
	for _, end := range []string{"tool added", "goodbye"} {
		t.Run(end, func(t *testing.T) {
			s := natstest.Server(t)
			clk := &testClock{}
			f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), clock: clk.now})
			ncW := natstest.Conn(t, s)
			tk := oneToolkit(t, "echo")
			a := startAnnouncer(t, ncW, tk, &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
			natstest.WaitFor(t, "w1 listed with echo", func() bool { return slices.Equal(toolNames(f), []string{"echo"}) })

			forged := a.Announcement() // what the subject shows: the run's incarnation and epoch
			forged.Seq = 1 << 63
			forged.Tools = []wire.AnnouncedTool{}
			hostile := natstest.Conn(t, s)
			publishAnnouncement(t, hostile, forged)
			natstest.WaitFor(t, "the forged message applied", func() bool { return listed(f, "w1") && len(toolNames(f)) == 0 })

			clk.advance(2 * reorderHorizon)
			a.mu.Lock()
			seq := a.seq
			a.mu.Unlock()
			switch end {
			case "tool added":
				if err := tk.Add(toolkit.Func("more", "More.", func(context.Context, struct{}) (string, error) { return "", nil })); err != nil {
					t.Fatal(err)
				}
				announcedAfter(t, f, a, ncW, seq)
				if got := toolNames(f); !slices.Equal(got, []string{"echo", "more"}) {
					t.Fatalf("after the forged seq 2^63, the worker's next announcement was not applied: tools %v, want [echo more]", got)
				}
			case "goodbye":
				if err := a.Stop(); err != nil {
					t.Fatal(err)
				}
				readThrough(t, f, ncW)
				if listed(f, "w1") {
					t.Fatal("after the forged seq 2^63, the worker's goodbye was ignored: it is still listed")
				}
			}
		})
	}
}
