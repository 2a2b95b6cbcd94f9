package bus

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestProbeFloodPastTheBound: anyone may publish to tools.pinned.<instance>
// (callers send calls there). Probes naming calls that never come, once
// maxExpected of them are noted, made every further probe scan all the
// noted calls for stale ones under the lock session routing takes too:
// some 60 µs a probe instead of one, so a modest flood held that lock
// and the probe subscription's goroutine, and other workers' probes,
// queued behind it, ran out their timeout and took the worker's sessions
// over. The noted calls are scanned at most once per forwardWait/8;
// past the bound in between, a probe counts as one naming none.
func TestProbeFloodPastTheBound(t *testing.T) {
	a := &affinity{probe: time.Second}
	start := time.Now()
	for i := range 3 * maxExpected {
		a.probed(&nats.Msg{Data: fmt.Appendf(nil, "_INBOX.hostile.%d", i)})
	}
	took := time.Since(start)
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.expected) != maxExpected || a.blind.IsZero() {
		t.Fatalf("%d calls noted (want %d), a probe naming none at %v", len(a.expected), maxExpected, a.blind)
	}
	// Once per forwardWait/8 at most, however slow the machine.
	if most := 1 + int(took/(forwardWait/8)); a.scans > most {
		t.Fatalf("the noted calls were scanned %d times in a flood of %d probes over %v (at most %d)", a.scans, 2*maxExpected, took, most)
	}
}
