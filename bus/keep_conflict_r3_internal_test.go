package bus

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A kept final written over a revision the key no longer has is a
// conflict, which keepLatest reads again for. On a replicated bucket the
// server first refuses the writes that find another write of the key in
// process (10164, not 10071), which was taken for a failure: the retry's
// final of a call went unkept, and its earlier attempt's stayed
// (TestChaosKeptRetryWorkerNodeDown, loaded). Such a write is made again
// (TestKeepRefusedWhileAnotherIsInProcess), and refused on the revision
// once the other is stored.
func TestKeepConflictOnAReplicatedBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster")
	}
	cl := natstest.NewCluster(t)
	nc, err := nats.Connect(cl.URLs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	r, err := openResults(natstest.Ctx(t), &ResultsOptions{JetStream: natstest.JS(t, nc), Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Writes over one revision at once: the server answers those that
	// find another write of the key in flight with the replicated code.
	var failed atomic.Uint64
	var meta wire.MetaEntry
	for round := range 5 {
		key := fmt.Sprint("c", round)
		none := uint64(0)
		var wg sync.WaitGroup
		var kept, conflicts atomic.Int64
		for i := range 16 {
			wg.Go(func() {
				resp := toolkit.Final(key, "", fmt.Sprint("attempt ", i))
				rev, conflict := r.keep(nc, true, key, key, resp, &meta, slog.Default(), &failed, &none, keptOf{attempt: uint64(i + 1)})
				switch {
				case conflict:
					conflicts.Add(1)
				case rev > 0:
					kept.Add(1)
				}
			})
		}
		wg.Wait()
		if kept.Load() != 1 || conflicts.Load() != 15 || failed.Load() != 0 {
			t.Fatalf("16 writes over one revision: %d kept, %d conflicts, %d failures", kept.Load(), conflicts.Load(), failed.Load())
		}
	}
}
