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
type fleetGroups struct {
	nc  *nats.Conn
	log *slog.Logger

	mu       sync.Mutex // held while the Fleet starts: one start at a time
	fleet    *discovery.Fleet
	failedAt time.Time
	closed   bool
}

// fleetGroupsRetry is how long after a failed start of the Fleet the
// fleet's groups are not asked for again (the call's own groups judge).
const fleetGroupsRetry = time.Second

// groups returns the fleet's groups, nil when the view cannot be had.
func (g *fleetGroups) groups(ctx context.Context) []toolkit.Group {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.fleet == nil && !g.closed && time.Since(g.failedAt) >= fleetGroupsRetry {
		f, err := discovery.NewFleet(ctx, g.nc, &discovery.FleetOptions{Logger: g.log})
		if err != nil {
			g.failedAt = time.Now()
			g.log.Warn("bus: starting the fleet view for reset_tools", "err", err)
		}
		g.fleet = f
	}
	if g.fleet == nil {
		return nil
	}
	return g.fleet.Groups()
}

// close stops the Fleet, if one was started; no other starts after.
func (g *fleetGroups) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.fleet != nil {
		g.fleet.Close()
		g.fleet = nil
	}
}
