package discovery

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// oneToolkit is a toolkit with one basic tool, name.
func oneToolkit(t *testing.T, name string) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func(name, "The tool "+name+".", func(context.Context, struct{}) (string, error) {
		return name, nil
	})); err != nil {
		t.Fatal(err)
	}
	return tk
}

// readThrough publishes an announcement of a new instance on nc and
// waits for f to list it: what nc published before has been read by then
// (one connection's messages reach a subscriber in order, and the fleet
// applies each subject's messages in the order they arrived).
func readThrough(t *testing.T, f *Fleet, nc *nats.Conn) {
	t.Helper()
	id := fmt.Sprint("barrier-", time.Now().UnixNano())
	publishAnnouncement(t, nc, wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: 1, IntervalMS: 3_600_000})
	natstest.WaitFor(t, id+" listed", func() bool { return listed(f, id) })
}

// TestRestartWithClockBehind: a worker restarted under the same instance
// id on a machine whose clock is behind the old one's (or after the
// clock was set back) is listed with its new tools as soon as its first
// announcement arrives, whether the old process died or said goodbye.
// Its announcements carried an older epoch_ms, and the fleet ordered an
// instance's messages by (epoch_ms, seq): it ignored them until the old
// entry (or its goodbye mark) ran out its TTL, here three hours. A late
// message of the old process still does not bring it back.
func TestRestartWithClockBehind(t *testing.T) {
	for _, goodbye := range []bool{false, true} {
		t.Run(fmt.Sprintf("goodbye=%v", goodbye), func(t *testing.T) {
			s := natstest.Server(t)
			f := startFleet(t, natstest.Conn(t, s), nil)
			ncOld := natstest.Conn(t, s)
			old := startAnnouncer(t, ncOld, oneToolkit(t, "before"), &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
			natstest.WaitFor(t, "the first process's tool listed", func() bool { return slices.Equal(toolNames(f), []string{"before"}) })
			late := old.Announcement() // a message of it still on its way when it ends
			if goodbye {
				if err := old.Stop(); err != nil {
					t.Fatal(err)
				}
				natstest.WaitFor(t, "the goodbye applied", func() bool { return !listed(f, "w1") })
			} else {
				ncOld.Close() // dies without a goodbye
			}

			behind := func() time.Time { return time.Now().Add(-time.Hour) }
			startAnnouncer(t, natstest.Conn(t, s), oneToolkit(t, "after"), &AnnouncerOptions{Instance: "w1", Interval: time.Hour, clock: behind})
			natstest.WaitFor(t, "the restarted process's tool listed, alone", func() bool { return slices.Equal(toolNames(f), []string{"after"}) })

			other := natstest.Conn(t, s)
			late.Seq += 10
			publishAnnouncement(t, other, late)
			readThrough(t, f, other)
			if !slices.Contains(toolNames(f), "after") || slices.Contains(toolNames(f), "before") {
				t.Fatalf("a late message of the old process was applied over the restarted one: %v", toolNames(f))
			}
		})
	}
}

// TestClockAheadListed: a worker whose clock is hours ahead of the
// fleet's is listed (its announcements were ignored as "from the
// future", and it was never listed).
func TestClockAheadListed(t *testing.T) {
	s := natstest.Server(t)
	f := startFleet(t, natstest.Conn(t, s), nil)
	ahead := func() time.Time { return time.Now().Add(5 * time.Hour) }
	startAnnouncer(t, natstest.Conn(t, s), oneToolkit(t, "ahead"), &AnnouncerOptions{Instance: "w1", clock: ahead})
	natstest.WaitFor(t, "the worker ahead listed", func() bool { return slices.Equal(toolNames(f), []string{"ahead"}) })
}
