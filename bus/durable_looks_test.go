package bus_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
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

// TestQueuedDurableCallsReadNoKeptFinals: durable calls waiting silent in
// the calls stream look for their kept final (the results bucket) at each
// of their looks. Each call read its own key every look, so a backlog of
// queued calls made direct gets in proportion to its size (10,000 calls:
// about 2,000 a second), though a call no worker has taken yet has no
// final kept. A call its tool's consumer has not delivered now reads
// nothing: the reads do not grow with the calls waiting. Once a worker
// takes them, every call ends with its final.
func TestQueuedDurableCallsReadNoKeptFinals(t *testing.T) {
	const n = 200
	const stall = 200 * time.Millisecond
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	w, _ := durableWorker(t, s, tk, 0, "w1")
	if err := w.Stop(ctxT(t)); err != nil { // the consumer and the results bucket stay
		t.Fatal(err)
	}

	var reads atomic.Int64
	watch := natstest.Connect(t, s)
	sub, err := watch.Subscribe("$JS.API.DIRECT.GET.KV_"+wire.BucketResults+".>", func(*nats.Msg) { reads.Add(1) })
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

	// Watch the reads for a few stall timeouts: each call looks at least
	// once in them.
	before := reads.Load()
	time.Sleep(4 * stall)
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, most := reads.Load()-before, int64(2); got > most {
		t.Fatalf("%d durable calls queued, none taken, read their kept finals %d times in %v; at most %d (whatever the calls waiting)", n, got, 4*stall, most)
	}
	select {
	case r := <-done:
		t.Fatalf("a queued durable call ended: %s %s %q", r.State, r.Code, r.Text())
	default:
	}

	// A worker back takes them: every call ends with its final.
	durableWorker(t, s, tk, 0, "w2")
	for i := range n {
		select {
		case r := <-done:
			if r.State != toolkit.StateSuccess || r.Text() != "hi" {
				t.Fatalf("a queued durable call taken by a worker: %s %s %q", r.State, r.Code, r.Text())
			}
		case <-time.After(guard):
			t.Fatalf("%d of %d queued durable calls taken by a worker had no final after %v", n-i, n, guard)
		}
	}
}

// TestSilentDurableCallReadsItsKeptFinalOnceDelivered: a durable call
// whose every frame was lost (its caller's link down while a worker ran
// it) heard of no worker, so it reads its kept final only once its tool's
// consumer says it delivered the call: it did, and the call ends with its
// kept final.
func TestSilentDurableCallReadsItsKeptFinalOnceDelivered(t *testing.T) {
	s := natstest.Embedded(t, true)
	tk := toolkit.New(nil)
	mustAdd(t, tk, chargeTool(nil, nil))
	w, _ := durableWorker(t, s, tk, 0, "w1")
	if err := w.Stop(ctxT(t)); err != nil { // the consumer stays
		t.Fatal(err)
	}
	px := natstest.ProxyTo(t, s)
	nc := px.Conn(t)
	c := newClient(t, nc, &bus.ClientOptions{StallTimeout: 500 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	reader := newClient(t, natstest.Connect(t, s), nil)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "pay1", Name: "charge", Durable: true}) }()
	waitQueued(t, s, 1)

	// Taken and answered while its caller's link is down.
	px.Cut()
	natstest.WaitFor(t, "the client to notice the break", func() bool { return !nc.IsConnected() })
	durableWorker(t, s, tk, 0, "w2")
	natstest.WaitFor(t, "the final to be kept", func() bool { return reader.Result(ctxT(t), "pay1").Text() == "charged" })
	px.Restore()
	select {
	case r := <-done:
		if r.State != toolkit.StateSuccess || r.Text() != "charged" {
			t.Fatalf("the silent call whose final was kept ended %s %s %q; want its kept success", r.State, r.Code, r.Text())
		}
	case <-time.After(guard):
		t.Fatalf("the silent call whose final was kept had no final after %v", guard)
	}
}

// TestSilentDurableCallReadsItsKeptFinalFromAConsumerMadeAgain: a
// durable call was delivered and its final kept, its frames lost and its
// acknowledgement too (it stays in the stream), and its tool's consumer
// was then deleted and made again (as one idle past ConsumerIdle is), so
// that the consumer has not delivered it. A consumer younger than the
// call cannot tell that it was never delivered: the silent call reads its
// kept final and ends with it, rather than wait for a worker for good.
func TestSilentDurableCallReadsItsKeptFinalFromAConsumerMadeAgain(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, chargeTool(nil, nil))
	w, _ := durableWorker(t, s, tk, 0, "w1")
	if err := w.Stop(ctxT(t)); err != nil { // the consumer stays
		t.Fatal(err)
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: 300 * time.Millisecond})
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "pay1", Name: "charge", Durable: true}) }()
	stream := waitQueued(t, s, 1)

	// Delivered (taken here, as a worker would), its final kept as a
	// worker keeps it, and not acknowledged.
	ctx := ctxT(t)
	cons, err := stream.Consumer(ctx, "charge")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(guard))
	if err != nil {
		t.Fatal(err)
	}
	msg, ok := <-batch.Messages()
	if !ok {
		t.Fatalf("the queued call was not delivered: %v", batch.Error())
	}
	final := &toolkit.Response{ID: "pay1", State: toolkit.StateSuccess, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "charged"}}}
	data, err := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: "pay1", Seq: 1, Final: final})
	if err != nil {
		t.Fatal(err)
	}
	js := natstest.JS(t, natstest.Connect(t, s))
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + wire.BucketResults + ".pay1", Data: data,
		Header: nats.Header{wire.HeaderVersion: {"1"}, wire.HeaderReply: {msg.Headers().Get(wire.HeaderReply)}}}); err != nil {
		t.Fatal(err)
	}
	remakeConsumer(t, stream, "charge")
	select {
	case r := <-done:
		if r.State != toolkit.StateSuccess || r.Text() != "charged" {
			t.Fatalf("the silent call whose final was kept ended %s %s %q; want its kept success", r.State, r.Code, r.Text())
		}
	case <-time.After(guard):
		t.Fatalf("the silent call whose final was kept had no final after %v", guard)
	}
}

// waitQueued waits for the calls stream of s to hold n calls, and
// returns it.
func waitQueued(t *testing.T, s *embedded.Server, n uint64) jetstream.Stream {
	t.Helper()
	js := natstest.JS(t, natstest.Connect(t, s))
	stream, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the calls queued", func() bool {
		info, err := stream.Info(ctxT(t))
		return err == nil && info.State.Msgs == n
	})
	return stream
}

// remakeConsumer deletes the calls stream's consumer of tool and makes it
// again as it was: it has delivered none of the calls there.
func remakeConsumer(t *testing.T, stream jetstream.Stream, tool string) {
	t.Helper()
	cons, err := stream.Consumer(ctxT(t), tool)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteConsumer(ctxT(t), tool); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.CreateConsumer(ctxT(t), cons.CachedInfo().Config); err != nil {
		t.Fatal(err)
	}
}
