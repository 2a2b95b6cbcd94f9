package bus

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

// fleetGroups is a worker's view of the fleet's groups, for reset_tools
// naming a group the worker lacks (toolkit.WithFleetGroups): in a
// mixed fleet, a session may activate a group another worker serves. The
// discovery.Fleet is started on the first such call and kept until the
// worker stops, so a caller sending bad names costs a read of that view,
// not a request to the fleet per call; a start that failed is tried
// again no sooner than fleetGroupsRetry later.
//
// The start is the view's own, not the call's: a call whose ctx ends
// (cancelled, or a deadline shorter than the discover window) only stops
// waiting for it, and ends with its context's outcome (interrupted or
// timeout: toolkit.WithFleetGroups), rather than failing the start and
// so, for fleetGroupsRetry, every other session's call. close ends a
// start under way and waits for it.
type fleetGroups struct {
	nc  *nats.Conn
	log *slog.Logger

	mu       sync.Mutex
	fleet    *discovery.Fleet
	starting chan struct{}      // closed when the start under way ends; nil when none is
	cancel   context.CancelFunc // ends the start under way
	failedAt time.Time
	closed   bool
	starts   sync.WaitGroup
}

// fleetGroupsRetry is how long after a failed start of the Fleet the
// fleet's groups are not asked for again (the call's own groups judge).
const fleetGroupsRetry = time.Second

// groups returns the fleet's groups, nil when the view cannot be had
// before ctx ends.
func (g *fleetGroups) groups(ctx context.Context) []toolkit.Group {
	g.mu.Lock()
	if g.fleet == nil && g.starting == nil && !g.closed && time.Since(g.failedAt) >= fleetGroupsRetry {
		var sctx context.Context
		sctx, g.cancel = context.WithCancel(context.Background())
		g.starting = make(chan struct{})
		g.starts.Add(1)
		go g.start(sctx, g.starting)
	}
	f, starting := g.fleet, g.starting
	g.mu.Unlock()
	if f == nil && starting != nil {
		select {
		case <-starting:
		case <-ctx.Done():
			return nil
		}
		g.mu.Lock()
		f = g.fleet
		g.mu.Unlock()
	}
	if f == nil {
		return nil
	}
	return f.Groups() // a closed Fleet still reads its last view
}

// start starts the Fleet and keeps it, unless close came first.
func (g *fleetGroups) start(ctx context.Context, done chan struct{}) {
	defer g.starts.Done()
	defer close(done)
	f, err := discovery.NewFleet(ctx, g.nc, &discovery.FleetOptions{Logger: g.log})
	g.mu.Lock()
	closed := g.closed
	g.starting, g.cancel = nil, nil
	switch {
	case err != nil:
		g.failedAt = time.Now()
	case !closed:
		g.fleet = f
	}
	g.mu.Unlock()
	switch {
	case err != nil && !closed:
		g.log.Warn("bus: starting the fleet view for reset_tools", "err", err)
	case err == nil && closed:
		f.Close()
	}
}

// close stops the Fleet, if one was started, ending and waiting for a
// start under way; no other starts after.
func (g *fleetGroups) close() {
	g.mu.Lock()
	g.closed = true
	f, cancel := g.fleet, g.cancel
	g.fleet = nil
	g.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	g.starts.Wait()
	if f != nil {
		f.Close()
	}
}
