package discovery

import (
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// NewFleet "already knows every instance that answered within the
// discover window" (DefaultDiscoverWindow, 250 ms). Past 32 discover
// requests in 250 ms, a worker answers the rest with one broadcast at the
// end of its answer window, which is also 250 ms long and began before
// those requests: the broadcast races the asking fleets' own windows.
// When 100 callers start at once (CLI runs, a gateway's sessions), some
// fleets come back without the worker (no tools), which never happened
// when every request was answered.
// 100 fleets started together (parallel CLI runs, a gateway's sessions)
// ask more than the answer bound; the requests beyond were answered by
// a broadcast at the end of the announcer's 250 ms window, after most
// fleets' own windows: they came up without the worker.
func TestFleetBurstFindsWorker(t *testing.T) {
	s := natstest.Server(t)
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	quiet := &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	const n = 100
	var missing atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		nc := natstest.Conn(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f, err := NewFleet(natstest.Ctx(t), nc, quiet)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			if !listed(f, "w1") {
				missing.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if m := missing.Load(); m > 0 {
		t.Fatalf("%d of %d fleets started together did not know the worker when NewFleet returned", m, n)
	}
}
