package bus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// unansweredCancels is a cancels stream whose lookups go unanswered (a
// stream without a leader), counting them.
type unansweredCancels struct {
	jetstream.Stream
	lookups atomic.Int32
}

func (s *unansweredCancels) GetLastMsgForSubject(context.Context, string) (*jetstream.RawStreamMsg, error) {
	s.lookups.Add(1)
	return nil, context.DeadlineExceeded
}

// TestCancelsLookupPausesAfterFailure: the lookups run one after another
// on a tool's pull loop, so after one fails the next deliveries do not
// look again for a while; an unreachable cancels stream costs one
// lookup's wait, not every queued call's in turn (a backlog would outlast
// its ack wait and be delivered again elsewhere).
func TestCancelsLookupPausesAfterFailure(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	w := serve(t, nc, toolkit.New(nil), &WorkerOptions{Durable: &DurableOptions{JetStream: natstest.JS(t, nc)}})
	// A durable path of the worker's own with the stream that does not
	// answer: the worker's clock reads the worker's (recheck), so it is
	// not replaced under it.
	fake := &unansweredCancels{Stream: w.dur.cancelsStream()}
	d := &durablePath{w: w, cancels: fake, cancelsBound: w.dur.cancelsBound}
	for _, id := range []string{"a", "b", "c"} {
		if _, ok := d.cancelled("", id, time.Now()); ok {
			t.Fatalf("call %s: a failed lookup counted as a cancel", id)
		}
	}
	if n := fake.lookups.Load(); n != 1 {
		t.Fatalf("%d lookups, want 1 (none while the stream was just found unanswering)", n)
	}
}
