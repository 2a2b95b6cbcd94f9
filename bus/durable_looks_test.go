package bus_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestQueuedDurableCallsShareLooks: durable calls waiting silent in the
// calls stream look at their tool's consumer to tell a call removed from
// the stream. Each call asked JetStream for the consumer's info itself at
// each of its looks, so a backlog of queued calls made JetStream API
// requests in proportion to its size (5,000 calls: about 1,000 a
// second). The calls of one tool now share one look, asked at most twice
// a stall timeout: the requests do not grow with the calls waiting.
func TestQueuedDurableCallsShareLooks(t *testing.T) {
	const n = 200
	const stall = 200 * time.Millisecond
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	w, _ := durableWorker(t, s, tk, 0, "w1")
	if err := w.Stop(ctxT(t)); err != nil { // the consumer stays
		t.Fatal(err)
	}

	var looks atomic.Int64
	watch := natstest.Connect(t, s)
	sub, err := watch.Subscribe("$JS.API.CONSUMER.INFO."+wire.StreamCalls+".echo", func(*nats.Msg) { looks.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}

	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: stall})
	ctx, cancel := context.WithCancel(ctxT(t))
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	done := make(chan *toolkit.Response, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done <- c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "hi"}})
		}()
	}
	js := natstest.JS(t, natstest.Connect(t, s))
	stream, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the calls queued", func() bool {
		info, err := stream.Info(ctxT(t))
		return err == nil && info.State.Msgs == n
	})

	// Watch the looks for a few stall timeouts: each call looks at least
	// once in them.
	start, before := time.Now(), looks.Load()
	time.Sleep(4 * stall)
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	got, elapsed := looks.Load()-before, time.Since(start)
	if most := 2*int64(elapsed/stall) + 3; got > most {
		t.Fatalf("%d durable calls queued for %v asked JetStream for their consumer's info %d times; at most %d (one look at a time, at most every half stall timeout, whatever the calls waiting)", n, elapsed, got, most)
	}
	select {
	case r := <-done:
		t.Fatalf("a queued durable call ended: %s %s %q", r.State, r.Code, r.Text())
	default:
	}

	// Each call still hears the shared look's answer: purged from the
	// stream, every one of them ends.
	if err := stream.Purge(ctxT(t), jetstream.WithPurgeSubject(wire.DurableSubject("echo", ""))); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		select {
		case r := <-done:
			if r.Code != toolkit.CodeWorkerLost || !strings.Contains(r.Text(), "no longer in the calls stream") {
				t.Fatalf("a queued durable call purged from the stream: %s %s %q", r.State, r.Code, r.Text())
			}
		case <-time.After(guard):
			t.Fatalf("%d of %d queued durable calls purged from the stream had no final after %v", n-i, n, guard)
		}
	}
}
