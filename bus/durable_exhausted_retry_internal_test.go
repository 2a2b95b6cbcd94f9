package bus

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// publishAdvisory puts a max-deliveries advisory of the call at seq of
// the calls stream in the exhausted stream, as JetStream would.
func publishAdvisory(t *testing.T, js jetstream.JetStream, seq uint64) {
	t.Helper()
	data, err := json.Marshal(maxDeliveries{Stream: wire.StreamCalls, Consumer: "gone", StreamSeq: seq, Deliveries: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(natstest.Ctx(t), "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+wire.StreamCalls+".gone", data); err != nil {
		t.Fatal(err)
	}
}

// waitExhaustedEmpty waits until every advisory of the exhausted stream
// was acknowledged (a work queue: then removed).
func waitExhaustedEmpty(t *testing.T, js jetstream.JetStream, what string) {
	t.Helper()
	natstest.WaitFor(t, what, func() bool {
		st, err := js.Stream(natstest.Ctx(t), wire.StreamExhausted)
		return err == nil && st.CachedInfo().State.Msgs == 0
	})
}

// setExhaustHook sets d's beforeExhaust and retryAfter, under d.mu, which
// an advisory's handling takes (begin) before it reads them.
func setExhaustHook(d *durablePath, retry time.Duration, hook func(seq uint64) error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.retryAfter, d.beforeExhaust = retry, hook
}

// exhaustWorker serves the durable path on nc, returning once the worker
// takes from the exhausted stream, which it binds in the background (an
// advisory published before the stream is made has nowhere to go).
func exhaustWorker(t *testing.T, nc *nats.Conn, instance string) *Worker {
	t.Helper()
	tk := toolkit.New(nil)
	w := serve(t, nc, tk, &WorkerOptions{Instance: instance, AnnounceInterval: -1, Durable: &DurableOptions{JetStream: natstest.JS(t, nc)}})
	natstest.WaitFor(t, "the worker taking from the exhausted stream", func() bool {
		w.dur.mu.Lock()
		defer w.dur.mu.Unlock()
		return w.dur.exhaustedCC != nil
	})
	return w
}

// TestExhaustedRetriedPastFiveFailures: an advisory whose handling
// failed five times (the calls stream's leader away half a minute, at a
// second between deliveries) was not delivered again: the exhausted
// stream's consumer delivered at most 5 times, and its call stayed
// unanswered in the calls stream for a day. It is delivered until it is
// answered; a consumer made by an earlier build, with MaxDeliver 5, is
// updated.
func TestExhaustedRetriedPastFiveFailures(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	ctx := natstest.Ctx(t)
	st, err := js.CreateStream(ctx, ExhaustedStreamConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: exhaustedQueue, AckPolicy: jetstream.AckExplicitPolicy,
		AckWait: exhaustedAckWait, MaxDeliver: 5, MaxAckPending: -1, InactiveThreshold: callsMaxAge}); err != nil {
		t.Fatal(err)
	}
	w := exhaustWorker(t, nc, "w")
	var tries atomic.Int32
	setExhaustHook(w.dur, 10*time.Millisecond, func(uint64) error {
		if tries.Add(1) <= 6 {
			return errors.New("the calls stream has no leader")
		}
		return nil
	})
	publishAdvisory(t, js, 1000)
	waitExhaustedEmpty(t, js, "the advisory answered after six failed deliveries")
	if n := tries.Load(); n != 7 {
		t.Fatalf("handled %d times, want 7", n)
	}
}

// TestExhaustCallsStreamGone: an advisory of a calls stream deleted
// since (an operator's `nats stream rm`) has nothing to answer: done, not
// an error retried for as long as the advisory is kept.
func TestExhaustCallsStreamGone(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	w := exhaustWorker(t, nc, "w")
	if err := natstest.JS(t, nc).DeleteStream(natstest.Ctx(t), wire.StreamCalls); err != nil {
		t.Fatal(err)
	}
	if err := w.dur.exhaust("gone", 1, 3); err != nil {
		t.Fatalf("an advisory of a deleted calls stream: %v", err)
	}
}

// TestExhaustedHandledSideBySide: a worker handled the advisories it
// pulled (16 at once) one after another, their AckWait running from
// their delivery: on a slow stream the last of a batch outlasted it and
// was delivered to a second worker too. They are handled side by side.
func TestExhaustedHandledSideBySide(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	w := exhaustWorker(t, nc, "w")
	const n = 3
	var mu sync.Mutex
	in, most := 0, 0
	all := make(chan struct{})
	setExhaustHook(w.dur, exhaustedRetry, func(uint64) error {
		mu.Lock()
		in++
		most = max(most, in)
		if in == n {
			close(all)
		}
		mu.Unlock()
		defer func() {
			mu.Lock()
			in--
			mu.Unlock()
		}()
		select {
		case <-all:
		case <-w.dur.ctx.Done(): // the test has failed
		}
		return nil
	})
	for i := range n {
		publishAdvisory(t, js, uint64(1000+i))
	}
	natstest.WaitFor(t, "the advisories handled at once", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return most == n
	})
	waitExhaustedEmpty(t, js, "the advisories answered")
}

// TestExhaustedHandedBackAtStop: a stopping worker's advisories, pulled
// and not yet answered, were left to their AckWait (a minute; a stop
// discarded those not yet handed to the callback, and the callback
// returned without a word); another worker took them only then. They
// are handed back, and another worker answers them at once.
func TestExhaustedHandedBackAtStop(t *testing.T) {
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))
	a := exhaustWorker(t, natstest.Connect(t, s), "a")
	setExhaustHook(a.dur, exhaustedRetry, func(uint64) error {
		<-a.dur.ctx.Done() // a slow stream; the worker stops meanwhile
		return a.dur.ctx.Err()
	})
	const n = exhaustedBatch + 4
	for i := range n {
		publishAdvisory(t, js, uint64(1000+i))
	}
	natstest.WaitFor(t, "a batch of advisories held by the worker", func() bool {
		c, err := js.Consumer(natstest.Ctx(t), wire.StreamExhausted, exhaustedQueue)
		return err == nil && c.CachedInfo().NumAckPending >= exhaustedBatch
	})
	stop, cancel := context.WithTimeout(context.Background(), natstest.Guard)
	defer cancel()
	a.Stop(stop)
	exhaustWorker(t, natstest.Connect(t, s), "b")
	waitExhaustedEmpty(t, js, "the advisories the stopped worker held answered by another")
}
