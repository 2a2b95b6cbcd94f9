package bus_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRetryAfterWorkerLost: the worker that took a read-only call goes
// silent; the client sends the call again, another worker answers, and the
// tool sees the first call's id as its key. A tool that may have effects
// is not sent again.
func TestRetryAfterWorkerLost(t *testing.T) {
	s := natstest.Embedded(t, false)
	keys := make(chan string, 4)
	lookup := toolkit.New(nil)
	mustAdd(t, lookup, toolkit.Raw("lookup", "Look it up.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		keys <- call.Key() + " " + call.ID
		return w.Write(toolkit.Text("found"))
	}), toolkit.ReadOnly())
	charge := toolkit.New(nil)
	mustAdd(t, charge, toolkit.Func("charge", "Charge a card.", func(ctx context.Context, in struct{}) (string, error) { return "charged", nil }))

	// lost takes the first call of tool and is gone; then a worker with tk
	// comes up in its place.
	lost := func(tool string, tk *toolkit.Toolkit) {
		hole(t, natstest.Connect(t, s), tool, func() { serve(t, natstest.Connect(t, s), tk, nil) })
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat})

	lost("lookup", lookup)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "look-1", Name: "lookup"})
	if r.ID != "look-1" || r.Text() != "found" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
		t.Fatalf("read-only call after a lost worker: %+v", r)
	}
	if k := <-keys; k != "look-1 look-1-r2" {
		t.Errorf("the tool saw key and id %q, want the first id as key", k)
	}

	lost("charge", charge)
	r = c.Invoke(ctxT(t), toolkit.ToolCall{ID: "charge-1", Name: "charge"})
	if r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaAttempts] != nil {
		t.Fatalf("a call that may have run was sent again: %+v", r)
	}
}

// TestRetryAfterOverloaded: an overloaded answer to an idempotent call is
// retried after retry_after_ms and runs once a slot is free.
func TestRetryAfterOverloaded(t *testing.T) {
	s := natstest.Embedded(t, false)
	release, started := make(chan struct{}), make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("hold", "Hold the only slot.", func(ctx context.Context, in struct{}) (string, error) {
		close(started)
		<-release
		return "held", nil
	}))
	mustAdd(t, tk, toolkit.Func("put", "Put a value.", func(ctx context.Context, in struct{}) (string, error) { return "put", nil }),
		toolkit.WithIdempotency(toolkit.Idempotent))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{MaxInFlight: 1, RetryAfter: 50 * time.Millisecond})
	c := newClient(t, natstest.Connect(t, s), nil)
	held := make(chan *toolkit.Response, 1)
	go func() { held <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hold"}) }()
	<-started
	go func() { time.Sleep(20 * time.Millisecond); close(release) }()
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put"}); r.Text() != "put" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) == "" {
		t.Fatalf("idempotent call after overloaded: %+v", r)
	}
	<-held
}

// TestRetryLeavesASilentPinnedWorker: a session is pinned to w1, which
// then freezes (its subscriptions stay on the server). A read-only call of
// the session ends worker_lost there once: the client forgets the pin, so
// the retry and the session's later calls go through the queue group,
// whose worker takes the session over.
func TestRetryLeavesASilentPinnedWorker(t *testing.T) {
	s := natstest.Embedded(t, true)
	peekWorker := func(nc *nats.Conn, instance string) {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("peek", "Read-only, session-bound.", func(ctx context.Context, in struct{}) (string, error) {
			return "peeked", nil
		}), toolkit.SessionBound(), toolkit.ReadOnly())
		serve(t, nc, tk, &bus.WorkerOptions{Instance: instance,
			Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc), ProbeTimeout: 200 * time.Millisecond}})
	}
	px := natstest.ProxyTo(t, s)
	peekWorker(px.Conn(t), "w1")
	// The stall timeout (3 heartbeats) is longer than the probe with which
	// a worker takes a session over; the frozen w1 still takes its share
	// of the queue group's calls, hence attempts enough for any draw.
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 100 * time.Millisecond, MaxAttempts: 20, DiscoverWindow: 200 * time.Millisecond})
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "peek", Session: "s"}); r.Text() != "peeked" || c.Pin("s") != "w1" {
		t.Fatalf("first call: %+v, pin %q", r, c.Pin("s"))
	}
	peekWorker(natstest.Connect(t, s), "w2")
	if _, err := c.Fleet(ctxT(t)); err != nil { // the fleet view knows peek is read-only
		t.Fatal(err)
	}
	spy := natstest.Connect(t, s)
	var toW1 atomic.Int32
	if _, err := spy.Subscribe(wire.PinnedSubject("w1", "peek", ""), func(*nats.Msg) { toW1.Add(1) }); err != nil {
		t.Fatal(err)
	}
	spy.Flush()

	px.Pause()
	t.Cleanup(px.Resume) // before the workers' cleanups
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "peek", Session: "s"})
	// The worker that took the session over says so in the output.
	if !strings.HasPrefix(r.Text(), "peeked") || !strings.Contains(r.Text(), "moved from worker w1") || r.Metadata[wire.MetaAttempts] == nil || toW1.Load() != 1 {
		t.Fatalf("final %s %q, attempts %v, %d sent to the frozen w1", r.Code, r.Text(), r.Metadata[wire.MetaAttempts], toW1.Load())
	}
	if pin := c.Pin("s"); pin == "w1" {
		t.Fatal("the session is still pinned to the frozen worker")
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "peek", Session: "s"}); r.Text() != "peeked" || toW1.Load() != 1 {
		t.Fatalf("a later call: %s %q, %d sent to w1", r.Code, r.Text(), toW1.Load())
	}
}

// TestRetryWithoutJetStream: the core path needs no JetStream, its
// retries neither: a read-only call whose worker went silent is sent
// again on a server without JetStream.
func TestRetryWithoutJetStream(t *testing.T) {
	ns := natstest.ServerWith(t, func(o *server.Options) { o.JetStream = false })
	lookup := toolkit.New(nil)
	mustAdd(t, lookup, toolkit.Func("lookup", "Look it up.", func(ctx context.Context, in struct{}) (string, error) { return "found", nil }), toolkit.ReadOnly())
	// A worker that takes the first call and never answers: it alone
	// serves until it took one.
	taken := hole(t, natstest.Conn(t, ns), "lookup", nil)
	c := newClient(t, natstest.Conn(t, ns), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat, DiscoverWindow: 200 * time.Millisecond})
	serve(t, natstest.Conn(t, ns), lookup, nil)
	var r *toolkit.Response
	for i := 0; ; i++ { // the queue group picks at random: until the hole took one
		r = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "lookup"})
		select {
		case <-taken:
		default:
			if i < 100 {
				continue
			}
			t.Fatal("the silent worker never got a call")
		}
		break
	}
	if r.Text() != "found" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
		t.Fatalf("read-only call after a lost worker, no JetStream: %s %q, attempts %v", r.Code, r.Text(), r.Metadata[wire.MetaAttempts])
	}
}
