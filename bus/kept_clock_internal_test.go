package bus

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKeepLatestWithClockOff: whether a later attempt's kept final was
// stored after this attempt was taken (its caller's resending: kept over
// this one's) or before it (an earlier call's under a reused id: written
// over) is told right by a worker whose clock is off the server's by a
// minute. It compared the entry's server stamp with the worker's clock:
// ahead, the worker wrote an earlier attempt's final over the latest
// one's, which its caller got; behind, it left an earlier call's final
// kept in place of this call's.
func TestKeepLatestWithClockOff(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	r, err := openResults(natstest.Ctx(t), &ResultsOptions{JetStream: js})
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Uint64
	var meta wire.MetaEntry
	keptAttemptIn := func(key string) (uint64, kv.Entry) {
		t.Helper()
		e, err := kv.LeaderGet(natstest.Ctx(t), js, wire.BucketResults, key)
		if err != nil || !e.Found {
			t.Fatalf("reading the kept final of %s: %+v, %v", key, e, err)
		}
		return keptAttemptOf(e.Header), e
	}
	keep2 := func(key string) {
		t.Helper()
		var none uint64
		if rev, conflict := r.keep(nc, true, key, key, toolkit.Final(key+"-r2", "", "attempt 2"), &meta, slog.Default(), &failed, &none, keptOf{attempt: 2}); rev == 0 || conflict {
			t.Fatalf("keeping attempt 2 of %s: revision %d, conflict %v", key, rev, conflict)
		}
	}
	for _, off := range []time.Duration{time.Minute, -time.Minute} {
		r.now = func() time.Time { return time.Now().Add(off) }

		// Attempt 1 taken, then attempt 2 (its caller's resending, a
		// stall timeout or more later: a second here, far more than a
		// read of the server takes) ends first and keeps its final:
		// attempt 1's is not kept.
		key := fmt.Sprint("resent", off > 0)
		started, taken := r.now(), time.Now()
		natstest.WaitFor(t, "a second past attempt 1's start", func() bool { return time.Since(taken) > time.Second })
		keep2(key)
		if rev, ok := r.keepLatest(nc, key, key, toolkit.Final(key, "", "attempt 1"), &meta, slog.Default(), &failed, started, keptOf{attempt: 1}); rev != 0 || !ok {
			t.Errorf("clock off by %v: attempt 1 ending after attempt 2 kept its final: revision %d, ok %v; want not kept", off, rev, ok)
		}
		if n, _ := keptAttemptIn(key); n != 2 {
			t.Errorf("clock off by %v: the kept final is attempt %d's; want the later attempt 2's", off, n)
		}

		// An earlier call under the same id kept its attempt 2's final;
		// this call (its attempt 1) is taken after that: its final is
		// kept over it. The two a second apart, far more than a read
		// of the server takes.
		key = fmt.Sprint("reused", off > 0)
		keep2(key)
		_, e := keptAttemptIn(key)
		natstest.WaitFor(t, "a second past the earlier call's final", func() bool { return time.Since(e.Created) > time.Second })
		started = r.now()
		if rev, ok := r.keepLatest(nc, key, key, toolkit.Final(key, "", "attempt 1"), &meta, slog.Default(), &failed, started, keptOf{attempt: 1}); rev == 0 || !ok {
			t.Errorf("clock off by %v: a call under a reused id kept nothing over the earlier call's final: revision %d, ok %v", off, rev, ok)
		}
		if n, _ := keptAttemptIn(key); n != 1 {
			t.Errorf("clock off by %v: the kept final is attempt %d's; want this call's attempt 1", off, n)
		}
	}
	if failed.Load() != 0 {
		t.Errorf("%d writes failed", failed.Load())
	}
}
