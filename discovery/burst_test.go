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

// TestFleetBurstFindsWorker: 100 fleets started together (parallel CLI
// runs, a gateway's sessions) all know the worker when NewFleet returns.
// Their discover requests were once bounded to 32 per answer window, the
// rest answered by a broadcast at the end of the announcer's window,
// after most fleets' own windows: they came up without the worker. The
// fleets here wait 5 s, not the default 250 ms: a machine busy enough can
// delay an answer past 250 ms, which says nothing of the bound.
func TestFleetBurstFindsWorker(t *testing.T) {
	s := natstest.Server(t)
	startAnnouncer(t, natstest.Conn(t, s), fleetToolkit(t), &AnnouncerOptions{Instance: "w1", Interval: time.Hour})
	quiet := &FleetOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscoverWindow: 5 * time.Second}
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
