package bus

import (
	"sync/atomic"

	"github.com/toolbus/toolbus/bus/wire"
)

// WorkerCounters are a worker's totals since Serve, for metrics.
type WorkerCounters struct {
	// Frames sent, by kind: wire.KindChunk, KindProgress, KindHeartbeat,
	// KindQueued, KindLog, KindAsk, KindFinal (finals of calls refused at
	// once included).
	Frames map[wire.Kind]uint64
	// SentBytes are the bodies of those frames.
	SentBytes uint64
	// Cancelled counts the calls taken here that a cancel or a deadline
	// ended: the caller's cancel, the caller's deadline, or the call's
	// own Toolbus-Timeout enforced here, whichever came first (once per
	// call); also those answered without running because their cancel
	// came first or their deadline had passed.
	Cancelled uint64
	// Overloaded counts the calls answered overloaded (MaxInFlight calls
	// were running).
	Overloaded uint64
	// CallersGone counts the calls cancelled because their caller was
	// gone: nothing subscribed to their reply subject for
	// WorkerOptions.CallerGoneAfter.
	CallersGone uint64
	// JetStreamErrors counts the JetStream operations of the durable path,
	// kept results and session affinity that failed (each also logged).
	JetStreamErrors uint64
	// Dropped counts the messages NATS dropped because the worker did
	// not take them in time, by kind of subscription (DroppedCalls,
	// DroppedCancels, …: every kind is present). A dropped call is never
	// answered: its caller sees worker_lost after its stall timeout.
	// Counted once a second, and when Counters is called (dropped.go).
	Dropped map[string]uint64
}

// counters are the atomics behind WorkerCounters.
type counters struct {
	frames     [len(frameKinds)]atomic.Uint64 // by frameKinds' order
	bytes      atomic.Uint64
	cancelled  atomic.Uint64
	overloaded atomic.Uint64
	callerGone atomic.Uint64
	jsErrors   atomic.Uint64
	// shownFrames and shownBytes are the most Counters reported: a frame
	// is counted before its publish and taken back when that fails
	// (publishProbe), so a read in between saw one frame more than the
	// next would; reported totals never go back (a Prometheus counter that
	// does reads as a reset), the frame taken back staying counted until
	// the frames sent since pass it.
	shownFrames [len(frameKinds)]atomic.Uint64
	shownBytes  atomic.Uint64
}

// atLeastShown returns the larger of v and what shown holds, and keeps it
// there.
func atLeastShown(shown *atomic.Uint64, v uint64) uint64 {
	for {
		old := shown.Load()
		if v <= old {
			return old
		}
		if shown.CompareAndSwap(old, v) {
			return v
		}
	}
}

var frameKinds = [...]wire.Kind{wire.KindChunk, wire.KindProgress, wire.KindHeartbeat, wire.KindQueued, wire.KindLog, wire.KindAsk, wire.KindFinal}

// sent counts one frame published (Worker.publish).
func (c *counters) sent(k wire.Kind, n int) {
	c.frames[frameIndex(k)].Add(1)
	c.bytes.Add(uint64(n))
}

// unsent takes back a frame counted by sent whose publish failed.
func (c *counters) unsent(k wire.Kind, n int) {
	c.frames[frameIndex(k)].Add(^uint64(0))
	c.bytes.Add(^uint64(n - 1))
}

func frameIndex(k wire.Kind) int {
	i := 6
	switch k {
	case wire.KindChunk:
		i = 0
	case wire.KindProgress:
		i = 1
	case wire.KindHeartbeat:
		i = 2
	case wire.KindQueued:
		i = 3
	case wire.KindLog:
		i = 4
	case wire.KindAsk:
		i = 5
	}
	return i
}

// Counters returns the worker's totals so far. Each never goes back from
// one call to the next (a frame whose publish failed after a call counted
// it stays counted until the frames sent since pass it).
func (w *Worker) Counters() WorkerCounters {
	w.drops.read()
	c := &w.count
	out := WorkerCounters{Frames: make(map[wire.Kind]uint64, len(frameKinds)),
		SentBytes: atLeastShown(&c.shownBytes, c.bytes.Load()), Cancelled: c.cancelled.Load(), Overloaded: c.overloaded.Load(),
		CallersGone: c.callerGone.Load(), JetStreamErrors: c.jsErrors.Load(), Dropped: w.drops.counts()}
	for i, k := range frameKinds {
		out.Frames[k] = atLeastShown(&c.shownFrames[i], c.frames[i].Load())
	}
	return out
}
