package discovery

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestForgedGoodbyeHidesLittle: a goodbye forged off a live worker's
// subject (its run's incarnation and epoch_ms copied, a later seq) asking
// an interval of an hour hid the worker from every fleet for three hours:
// its real announcements were of a run that had ended. A run's messages
// leave one connection in seq order and the goodbye is the last, so one
// of the run that arrives well after its goodbye is the run going on:
// the worker is listed again with its next announcement.
func TestForgedGoodbyeHidesLittle(t *testing.T) {
	s := natstest.Server(t)
	clk := &testClock{}
	f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), clock: clk.now})
	ncW := natstest.Conn(t, s)
	tk := oneToolkit(t, "echo")
	a := startAnnouncer(t, ncW, tk, &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	natstest.WaitFor(t, "w1 listed with echo", func() bool { return slices.Equal(toolNames(f), []string{"echo"}) })

	forged := a.Announcement() // what the subject shows: the run's incarnation and epoch
	forged.Seq++
	forged.Goodbye, forged.Tools, forged.IntervalMS = true, []wire.AnnouncedTool{}, MaxInterval.Milliseconds()
	hostile := natstest.Conn(t, s)
	publishAnnouncement(t, hostile, forged)
	natstest.WaitFor(t, "the forged goodbye applied", func() bool { return !listed(f, "w1") })

	clk.advance(2 * reorderHorizon)
	a.mu.Lock()
	seq := a.seq
	a.mu.Unlock()
	if err := tk.Add(toolkit.Func("more", "More.", func(context.Context, struct{}) (string, error) { return "", nil })); err != nil {
		t.Fatal(err)
	}
	announcedAfter(t, f, a, ncW, seq)
	if got := toolNames(f); !slices.Equal(got, []string{"echo", "more"}) {
		t.Fatalf("after a forged goodbye, the live worker's next announcement did not list it: tools %v, want [echo more]", got)
	}
}

// TestGoodbyeIgnoresLateMessages: after a real goodbye, the run's
// messages that arrived before it, or up to reorderHorizon after it (a
// discover answer and the goodbye are stamped by two subscriptions), are
// ignored whenever they are read; so is a message of it that arrives
// later while another run of the instance is listed (a restart).
func TestGoodbyeIgnoresLateMessages(t *testing.T) {
	for _, tt := range []struct {
		name    string
		after   time.Duration // when the late message arrived, from the goodbye
		restart bool          // another run listed meanwhile
		listed  bool          // whether the run is listed again
	}{
		{"arrived before", -time.Millisecond, false, false},
		{"within the horizon", reorderHorizon / 2, false, false},
		{"well after: the run goes on", 2 * reorderHorizon, false, true},
		{"well after, another run listed", 2 * reorderHorizon, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := natstest.Server(t)
			f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			ann := wire.Announcement{Format: 1, Instance: "w1", Incarnation: "r1", EpochMS: 1, Seq: 1, IntervalMS: 2000, Tools: []wire.AnnouncedTool{}}
			bye := ann
			bye.Seq, bye.Goodbye = 2, true
			t0 := time.Now()
			f.apply(announcementMsg(t, ann), t0)
			f.apply(announcementMsg(t, bye), t0.Add(time.Millisecond))
			if tt.restart {
				next := ann
				next.Incarnation = "r2"
				f.apply(announcementMsg(t, next), t0.Add(2*time.Millisecond))
			}
			late := ann
			late.Seq = 3
			f.apply(announcementMsg(t, late), t0.Add(time.Millisecond+tt.after))
			f.mu.Lock()
			in := f.instances["w1"]
			f.mu.Unlock()
			if got := in != nil && in.ann.Incarnation == "r1"; got != tt.listed {
				t.Fatalf("run r1 listed after its goodbye: %v, want %v", got, tt.listed)
			}
		})
	}
}
