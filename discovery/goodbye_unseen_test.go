package discovery

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestUnseenGoodbyeRemembered: a worker that stops while a fleet's
// discover answer of it waits to be read (the window is not over) says
// goodbye before the fleet knows it; the fleet remembers that goodbye so
// the answer, read later, does not list a stopped worker for its TTL.
// It remembered goodbyes of instances never seen only while fewer than
// maxGoodbyes instances had ended runs remembered, seen or not: a
// neighbour's goodbyes for invented ids (remembered for up to three
// hours), or a fleet in which that many workers had restarted or
// stopped, had the next real goodbye forgotten at once.
func TestUnseenGoodbyeRemembered(t *testing.T) {
	for _, before := range []string{"goodbyes of instances never seen", "instances that came and went"} {
		t.Run(before, func(t *testing.T) {
			s := natstest.Server(t)
			f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			for i := range maxGoodbyes + 10 {
				id := fmt.Sprintf("other-%d", i)
				if before == "instances that came and went" {
					f.apply(announcementMsg(t, wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: 1, IntervalMS: 2000}), time.Now())
				}
				f.apply(announcementMsg(t, wire.Announcement{Format: 1, Instance: id, EpochMS: 1, Seq: 2, IntervalMS: MaxInterval.Milliseconds(), Goodbye: true}), time.Now())
			}

			answered := time.Now()
			answer := wire.Announcement{Format: 1, Instance: "w1", Incarnation: "r1", EpochMS: 1, Seq: 1, IntervalMS: 2000, Tools: []wire.AnnouncedTool{}}
			bye := answer
			bye.Seq, bye.Goodbye = 2, true
			f.apply(announcementMsg(t, bye), answered.Add(time.Millisecond))
			f.apply(announcementMsg(t, answer), answered) // read at the end of the discover window
			f.mu.Lock()
			defer f.mu.Unlock()
			if _, kept := f.instances["w1"]; kept {
				t.Fatal("a worker's discover answer read after its goodbye listed the stopped worker")
			}
			n := 0
			for _, rs := range f.retired {
				for _, x := range rs {
					if x.unseen {
						n++
					}
				}
			}
			if n != f.nUnseen || n > maxGoodbyes {
				t.Errorf("%d goodbyes of instances not listed remembered, %d counted, want at most %d", n, f.nUnseen, maxGoodbyes)
			}
		})
	}
}
