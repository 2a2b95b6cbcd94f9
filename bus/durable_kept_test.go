package bus_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
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

// keepingWorker serves tk with the durable path and kept results on.
func keepingWorker(t *testing.T, s *embedded.Server, tk *toolkit.Toolkit, o bus.WorkerOptions, ackWait time.Duration) (*bus.Worker, *nats.Conn) {
	t.Helper()
	return startDurableWorker(t, s, tk, o, ackWait, true)
}

// TestDurableHandBackKeepsNothing: a call a stopping worker hands back to
// the queue answers nothing there, and keeps nothing either: its caller,
// silent meanwhile, must not read a kept "interrupted" and stop, while
// the next worker runs the call.
func TestDurableHandBackKeepsNothing(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int32
	started := make(chan struct{}, 2)
	newTK := func(hang bool) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("sync", "Sync the mirror.", func(ctx context.Context, in struct{}) (string, error) {
			runs.Add(1)
			started <- struct{}{}
			if hang {
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "synced", nil
		}), toolkit.WithIdempotency(toolkit.Idempotent))
		return tk
	}
	w1, _ := keepingWorker(t, s, newTK(true), bus.WorkerOptions{Instance: "leaving"}, 0)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "hb1", Name: "sync", Durable: true}) }()
	<-started
	grace, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w1.Stop(grace) // a rolling restart: the next worker comes a moment later
	var r *toolkit.Response
	select {
	case r = <-done:
	case <-time.After(time.Second): // the caller looked for a kept final meanwhile
	}
	keepingWorker(t, s, newTK(false), bus.WorkerOptions{Instance: "next"}, 0)
	if r == nil {
		r = <-done
	}
	if r.Text() != "synced" || runs.Load() != 2 {
		t.Fatalf("a call handed back ended %s %q for its caller (runs: %d)", r.Code, r.Text(), runs.Load())
	}
	if kept := c.Result(ctxT(t), "hb1"); kept.Text() != "synced" {
		t.Fatalf("kept: %s %q", kept.Code, kept.Text())
	}
}

// TestDurableAbandonKeepsItsAnswer: a durable call whose tool ignores its
// ended context is answered without it (abandoned) and acknowledged; what
// is kept is that answer, also after the tool returns late. The deadline
// is to pass while the tool runs: a call whose deadline passed before its
// tool started (a loaded machine, the call still on its way) ends timeout
// without it, and is made again with twice the time.
func TestDurableAbandonKeepsItsAnswer(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int64
	release := make(chan struct{})
	returned := make(chan struct{}, 4)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("slow", "Ignores its context.", func(ctx context.Context, in struct{}) (string, error) {
		runs.Add(1)
		defer func() { returned <- struct{}{} }()
		<-release
		return "late success", nil
	}))
	keepingWorker(t, s, tk, bus.WorkerOptions{Instance: "w1", AbandonAfter: 100 * time.Millisecond}, 0)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{CancelGrace: guard})
	for d, n := 200*time.Millisecond, 1; ; d, n = 2*d, n+1 {
		id := fmt.Sprint("ab", n)
		ran := runs.Load()
		ctx, cancel := context.WithTimeout(context.Background(), d)
		r := c.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "slow", Durable: true})
		cancel()
		if r.Code != toolkit.CodeTimeout {
			t.Fatalf("the caller got %s %q: want timeout", r.Code, r.Text())
		}
		if runs.Load() == ran {
			if d > guard {
				t.Fatalf("the tool never started within its call's deadline, %v at last", d)
			}
			t.Logf("the deadline of %v passed before the tool started; again with %v", d, 2*d)
			continue
		}
		if r.Metadata[wire.MetaWorker] != "w1" {
			t.Fatalf("the caller got %s from %v: want the worker's timeout", r.Code, r.Metadata[wire.MetaWorker])
		}
		if kept := c.Result(ctxT(t), id); kept.Code != toolkit.CodeTimeout {
			t.Fatalf("kept right after: %s %q", kept.Code, kept.Text())
		}
		close(release)
		<-returned
		time.Sleep(200 * time.Millisecond)
		if kept := c.Result(ctxT(t), id); kept.Code != toolkit.CodeTimeout {
			t.Fatalf("kept after the tool returned: %s %q", kept.Code, kept.Text())
		}
		return
	}
}

// TestDurableSettledFinalIsKept: a non-idempotent tool's call loses its
// worker; the next delivery is answered worker_lost without running and
// leaves the queue. That final is kept: a caller whose link was down
// while it was sent (what kept finals are for) finds it when it comes
// back, instead of waiting for a delivery that never comes.
func TestDurableSettledFinalIsKept(t *testing.T) {
	s := natstest.Embedded(t, true)
	started := make(chan struct{}, 4)
	newTK := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("charge", "Charges a card.", func(ctx context.Context, in struct{}) (string, error) {
			started <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}))
		return tk
	}
	var answered atomic.Int32
	onFinal := func(tool string, st toolkit.State, code toolkit.Code, took time.Duration) {
		if code == toolkit.CodeWorkerLost {
			answered.Add(1)
		}
	}
	p := natstest.ProxyTo(t, s)
	cnc := p.Conn(t)
	c := newClient(t, cnc, &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})

	w1, nc1 := keepingWorker(t, s, newTK(), bus.WorkerOptions{Instance: "doomed", OnFinal: onFinal}, time.Second)
	done := make(chan *toolkit.Response, 1)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{ID: "pay1", Name: "charge", Durable: true}) }()
	<-started
	time.Sleep(100 * time.Millisecond) // the caller has the first delivery's heartbeats
	nc1.Close()                        // the worker is gone
	gone, stop := context.WithCancel(context.Background())
	stop()
	w1.Stop(gone)
	p.Cut() // the caller's link breaks for a moment
	keepingWorker(t, s, newTK(), bus.WorkerOptions{Instance: "heir", OnFinal: onFinal}, time.Second)
	natstest.WaitFor(t, "the heir to answer the redelivery", func() bool { return answered.Load() == 1 })
	p.Restore()
	r := <-done
	if r.Code != toolkit.CodeWorkerLost {
		t.Fatalf("the caller got %s (%s): want the heir's worker_lost", r.Code, r.Text())
	}
	if kept := c.Result(ctxT(t), "pay1"); kept.Code != toolkit.CodeWorkerLost {
		t.Fatalf("kept: %s", kept.Code)
	}
}

// lostAckJS is a real JetStream whose next publish acknowledgement is
// lost: the stream stores the message, the publisher sees its bound pass
// (as when the stream's leader changes).
type lostAckJS struct {
	jetstream.JetStream
	lose atomic.Int32
}

func (j *lostAckJS) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	ack, err := j.JetStream.PublishMsg(ctx, m, opts...)
	if err == nil && j.lose.Add(-1) >= 0 {
		<-ctx.Done() // the publisher waits out its bound
		return nil, ctx.Err()
	}
	return ack, err
}

// TestEnqueueLostAck: a worker queues a durable-by-default tool's core
// call and the stream's acknowledgement is lost: the worker publishes
// again with the same message id (stored once) instead of running the
// call here as well; when no acknowledgement comes at all, the worker
// leaves the call to the queue (the stream may have it) and runs nothing.
func TestEnqueueLostAck(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int32
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("charge", "Charges a card.", func(ctx context.Context, in struct{}) (string, error) {
		runs.Add(1)
		return "charged", nil
	}), toolkit.Durable())
	nc := natstest.Connect(t, s)
	js := &lostAckJS{JetStream: natstest.JS(t, nc)}
	var logs natstest.Buffer
	w := serve(t, nc, tk, &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: js},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: guard})

	for _, tc := range []struct {
		id    string
		lose  int32
		ended func() bool // the worker is done queueing
	}{
		{"card1", 1, func() bool { return w.Counters().Frames[wire.KindQueued] == 1 }},
		{"card2", 1 << 30, func() bool {
			return strings.Contains(logs.String(), "queueing went unanswered; leaving it to the queue")
		}},
	} {
		before := runs.Load()
		js.lose.Store(tc.lose)
		// Stored at the first try: the queue runs it while the worker
		// still waits for the acknowledgement.
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: tc.id, Name: "charge"}); r.Text() != "charged" {
			t.Fatalf("%s: %s %q", tc.id, r.Code, r.Text())
		}
		natstest.WaitFor(t, "the worker to end queueing "+tc.id, tc.ended)
		time.Sleep(300 * time.Millisecond) // a copy run here would have started
		if n := runs.Load() - before; n != 1 {
			t.Fatalf("%s: the call ran %d times\n%s", tc.id, n, logs.String())
		}
	}
	if strings.Contains(logs.String(), "running it here") {
		t.Fatalf("a call whose queueing was uncertain ran here:\n%s", logs.String())
	}
}

// TestDurableRedeliveryAfterKeptFinal: a call whose delivery ended and
// kept its final, but whose acknowledgement was lost, is delivered again;
// the redelivery neither runs the tool nor replaces the kept final with a
// worker_lost: the kept final stays what the caller got.
func TestDurableRedeliveryAfterKeptFinal(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	ctx := ctxT(t)
	st, err := js.CreateStream(ctx, bus.CallsStreamConfig(time.Minute, 1))
	if err != nil {
		t.Fatal(err)
	}
	const ackWait = 300 * time.Millisecond
	cons, err := st.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "put",
		FilterSubjects: []string{wire.DurableSubject("put", ""), wire.DurableSubject("put", "*")},
		AckPolicy:      jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: 3, MaxAckPending: -1})
	if err != nil {
		t.Fatal(err)
	}
	results, err := js.CreateKeyValue(ctx, bus.ResultsBucketConfig(0, 1))
	if err != nil {
		t.Fatal(err)
	}
	body, err := wire.Msgpack.Marshal(&wire.Request{ID: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: wire.DurableSubject("put", ""), Data: body,
		Header: nats.Header{wire.HeaderReply: {"_INBOX.gone.1"}, jetstream.MsgIDHeader: {"c1"}}}); err != nil {
		t.Fatal(err)
	}
	// The first delivery: it ran and kept its final, and its
	// acknowledgement was lost.
	b, err := cons.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for range b.Messages() {
	}
	kept, err := wire.Msgpack.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: "c1", Seq: 1,
		Final: &toolkit.Response{ID: "c1", State: toolkit.StateSuccess, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "stored"}}}})
	if err != nil {
		t.Fatal(err)
	}
	// As a worker keeps it: with the wire version (keptMsg).
	if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + results.Bucket() + ".c1", Header: nats.Header{wire.HeaderVersion: {wire.Version}}, Data: kept}); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("put", "Store a value.", func(ctx context.Context, in struct{}) (string, error) {
		runs.Add(1)
		return "again", nil
	}))
	keepingWorker(t, s, tk, bus.WorkerOptions{Instance: "w1"}, ackWait)
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending == 0 && info.NumPending == 0 && info.NumRedelivered == 0 {
			break // the redelivery was settled
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := newClient(t, nc, nil)
	if r := c.Result(ctx, "c1"); r.Text() != "stored" || runs.Load() != 0 {
		t.Fatalf("after the redelivery: kept %s %q, the tool ran %d times", r.Code, r.Text(), runs.Load())
	}
}

// TestDurableKeptFinalStoredLate: the caller of a durable call that lost
// a chunk across a reconnect holds a final counting more chunks than it
// got, and reads the kept final instead; the worker publishes that
// without waiting for the bucket, so the read can come before the store.
// Here it does, every run: the results stream hears nothing of the
// worker's put (its subjects moved aside) until the caller's first read
// has been answered "not found", then the put is stored. The caller looks
// again and answers with the whole kept final, not what it received.
func TestDurableKeptFinalStoredLate(t *testing.T) {
	s := natstest.Embedded(t, true)
	tk := toolkit.New(nil)
	three, release, wrote := threeTool()
	mustAdd(t, tk, three)
	keepingWorker(t, s, tk, bus.WorkerOptions{}, 0)

	ctx := ctxT(t)
	tnc := natstest.Connect(t, s)
	js := natstest.JS(t, tnc)
	stream, err := js.Stream(ctx, "KV_"+wire.BucketResults)
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	heard := cfg.Subjects
	cfg.Subjects = []string{"$KV." + wire.BucketResults + ".deaf"}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	puts, err := tnc.SubscribeSync("$KV." + wire.BucketResults + ".>")
	if err != nil {
		t.Fatal(err)
	}
	// The replies to the caller's requests: its reads of the kept final
	// among them.
	replies, err := tnc.SubscribeSync("_INBOX.caller.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := tnc.Flush(); err != nil {
		t.Fatal(err)
	}
	stored := make(chan error, 1)
	go func() { // waited for below
		stored <- func() error {
			put, err := puts.NextMsg(guard)
			if err != nil {
				return fmt.Errorf("the worker's put of the kept final: %w", err)
			}
			puts.Unsubscribe()
			for {
				m, err := replies.NextMsg(guard)
				if err != nil {
					return fmt.Errorf("the caller's read of the kept final: %w", err)
				}
				if m.Header.Get("Status") == "404" {
					break
				}
			}
			cfg.Subjects = heard
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				return err
			}
			_, err = js.PublishMsg(ctx, &nats.Msg{Subject: put.Subject, Header: put.Header, Data: put.Data})
			return err
		}()
	}()

	px := natstest.ProxyTo(t, s)
	nc := px.Conn(t, nats.ReconnectWait(10*time.Millisecond), nats.CustomInboxPrefix("_INBOX.caller"))
	// Heartbeats far apart: the break is not taken for a lost worker.
	c := newClient(t, nc, &bus.ClientOptions{Heartbeat: 20 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	var final *toolkit.Response
	for ev := range c.Call(ctx, toolkit.ToolCall{ID: "late-1", Name: "three", Durable: true}) {
		if ev.Chunk != nil && ev.Chunk.Content[0].Text == "a" {
			loseFrames(t, px, nc, release, wrote)
		}
		final = ev.Final
	}
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	if final == nil || final.Text() != "abc" || final.State != toolkit.StateSuccess || final.ID != "late-1" {
		t.Fatalf("final %+v, want the kept abc", final)
	}
}
