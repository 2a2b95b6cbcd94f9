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

// TestRetiredFloodSparesRealMarks: a neighbour that keeps the fleet's
// ended runs at their bound (maxRetired) with runs it makes up, each
// asking the longest TTL (three MaxIntervals), had the fleet forget the
// run ending soonest first: a real worker's goodbye (a 6 s TTL) was
// forgotten at the neighbour's next message, and the worker's discover
// answer read after it listed the stopped worker for one more TTL. Past
// the bound the oldest ended run goes first, whatever TTL it claimed, so
// a real goodbye is forgotten early only after maxRetired more runs have
// ended after it; a real worker with a long interval keeps its goodbye
// too.
func TestRetiredFloodSparesRealMarks(t *testing.T) {
	for _, intervalMS := range []int64{2000, MaxInterval.Milliseconds()} {
		for _, seen := range []bool{false, true} {
			t.Run(fmt.Sprintf("interval=%dms/listed=%v", intervalMS, seen), func(t *testing.T) {
				s := natstest.Server(t)
				f := startFleet(t, natstest.Conn(t, s), &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				flood := func(from, to int) {
					for i := from; i < to; i++ {
						retireRuns(t, f, fmt.Sprintf("forged-%d", i), retiredPerInstance, MaxInterval.Milliseconds())
					}
				}
				flood(0, maxRetired/retiredPerInstance)

				w1 := wire.Announcement{Format: 1, Instance: "w1", Incarnation: "r1", EpochMS: 1, Seq: 1, IntervalMS: intervalMS, Tools: []wire.AnnouncedTool{}}
				if seen {
					f.apply(announcementMsg(t, w1), time.Now())
				}
				answer := w1
				answer.Seq = 2
				answered := time.Now()
				bye := w1
				bye.Seq, bye.Goodbye = 3, true
				f.apply(announcementMsg(t, bye), answered.Add(time.Millisecond))
				flood(maxRetired/retiredPerInstance, maxRetired/retiredPerInstance+100)
				f.apply(announcementMsg(t, answer), answered) // read at the end of the discover window

				f.mu.Lock()
				defer f.mu.Unlock()
				if _, kept := f.instances["w1"]; kept {
					t.Fatal("a flood of made-up ended runs pushed out the real worker's goodbye: its discover answer read after it listed the stopped worker")
				}
				n := 0
				for _, rs := range f.retired {
					n += len(rs)
				}
				if n != f.nRetired || n > maxRetired {
					t.Errorf("%d ended runs remembered, %d counted, want at most %d", n, f.nRetired, maxRetired)
				}
			})
		}
	}
}
