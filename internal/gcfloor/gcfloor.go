// Package gcfloor keeps a small heap from being collected every few
// megabytes.
//
// Go starts a collection when the heap has grown by GOGC percent (100)
// of what the last one left live. A worker's live heap is small (a few
// MiB: its connection's buffers, the tools, the calls in flight) while
// it allocates some KiB per call, so at tens of thousands of calls per
// second the default collects many times a second and the collector
// takes a quarter of the worker's CPU. Start raises GOGC, after every
// collection, so that the next one comes when floor bytes were allocated
// past the live heap or GOGC=100 would have it, whichever is later: with
// the worker's floor of 16 MiB a heap of 4 MiB live is collected at 20
// MiB rather than at 8, a heap of 100 MiB at 200 MiB as by default. The cost is at most floor bytes
// of garbage held between collections, and nothing at rest (no
// allocation, no garbage).
//
// Start does nothing when the GOGC or GOMEMLIMIT environment variable
// is set: the operator has chosen.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Default is the floor a worker process keeps.
const Default = 16 << 20

// minimumHeap is the runtime's smallest heap goal at GOGC=100.
const minimumHeap = 4 << 20

// maxPercent bounds the GOGC set, whatever the floor.
const maxPercent = 1 << 20

// Start adjusts GOGC after every collection for a floor of floor bytes
// (see the package doc); the returned function stops it and restores
// GOGC=100. It does nothing (and returns a no-op) when GOGC or
// GOMEMLIMIT is set in the environment or floor is not positive.
func Start(floor uint64) (stop func()) {
	if floor == 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	t := &tuner{floor: floor, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, percent: 100}
	t.arm()
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.stopped {
			t.stopped = true
			debug.SetGCPercent(100)
		}
	}
}

type tuner struct {
	floor  uint64
	sample []metrics.Sample

	mu      sync.Mutex // an adjustment and the stop, one at a time
	percent int
	stopped bool
}

// sentinel is garbage from the moment it is armed: its finalizer runs
// after the next collection, adjusts and arms the next one.
type sentinel struct{ _ *tuner }

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.stopped {
			return
		}
		t.adjust()
		t.arm()
	})
}

// adjust sets GOGC for the live heap the last collection left; t.mu is
// held.
func (t *tuner) adjust() {
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	// The runtime's own minimum goal, 4 MiB at GOGC=100, grows with
	// GOGC: over a tiny heap the goal is that minimum, so the percent
	// stops where the minimum reaches the floor.
	live := max(t.sample[0].Value.Uint64(), minimumHeap)
	p := int(min(max(100, t.floor*100/live), maxPercent))
	// Only a change worth it: setting GOGC takes the heap lock.
	if p*10 < t.percent*9 || p*10 > t.percent*11 {
		t.percent = p
		debug.SetGCPercent(p)
	}
}
