package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// putTool is a session-bound tool that counts its runs.
func putTool(ran *atomic.Int64) *toolkit.Tool {
	schema := map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}
	return toolkit.Raw("put", "Keep a value.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		ran.Add(1)
		return w.Write(toolkit.Text("kept"))
	})
}

// TestUnservedPinnedSessionMoves: a session pinned to worker a; a's
// session-bound tool "put" is removed (its MCP server gone) while worker b
// still serves it. The client sends the session's next put call straight
// to a's pinned subject; a passes it on to the queue group saying its pin
// is lost (Toolbus-Pin-Lost), so b takes the session over and runs the
// call instead of forwarding it back to a, which is alive but cannot run
// it; the session's later calls run on b.
func TestUnservedPinnedSessionMoves(t *testing.T) {
	s := natstest.Embedded(t, false)
	var ranA, ranB atomic.Int64
	tks := map[string]*toolkit.Toolkit{"a": toolkit.New(nil), "b": toolkit.New(nil)}
	mustAdd(t, tks["a"], putTool(&ranA), toolkit.SessionBound())
	mustAdd(t, tks["b"], putTool(&ranB), toolkit.SessionBound())
	for name, tk := range tks {
		nc := natstest.Connect(t, s)
		serve(t, nc, tk, &bus.WorkerOptions{Instance: name, Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc)}})
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxAttempts: 1})
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: "s", Input: map[string]any{"value": "1"}})
	owner, _ := r.Metadata[wire.MetaSessionWorker].(string)
	if r.Text() != "kept" || owner == "" {
		t.Fatalf("first put: %+v", r)
	}
	other := map[string]string{"a": "b", "b": "a"}[owner]
	tks[owner].Remove("put") // the pinned worker no longer serves put
	spy, err := natstest.Connect(t, s).SubscribeSync(wire.SubjectPinnedPrefix + owner + ".>")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: "s", Input: map[string]any{"value": "2"}})
		if r.State != toolkit.StateSuccess {
			t.Errorf("put %d after it was removed from %s (pinned), %s still serving it: %s %s %q (metadata %v)",
				i, owner, other, r.State, r.Code, r.Text(), r.Metadata)
		}
	}
	for {
		m, err := spy.NextMsg(100 * time.Millisecond)
		if err != nil {
			break
		}
		t.Logf("on %s: forwarded=%q unserved=%q", m.Subject, m.Header.Get(wire.HeaderForwarded), m.Header.Get(wire.HeaderUnserved))
	}
}

// slowRouteFleet: worker a (session affinity, probe timeout 800ms) serves
// the session-bound "put"; the session "s" is pinned to "ghost", a worker
// that is gone, so a's routing of the session's call waits for the probe,
// sending heartbeats meanwhile. During that wait worker b (which serves put)
// starts and put is removed from a: a passes the call on (sender.unserved).
func slowRouteFleet(t *testing.T, hb time.Duration) (maxPayload int, call func(input map[string]any) (*toolkit.Response, int64)) {
	es := natstest.Embedded(t, false)
	var ranA, ranB atomic.Int64
	tkA, tkB := toolkit.New(nil), toolkit.New(nil)
	mustAdd(t, tkA, putTool(&ranA), toolkit.SessionBound())
	mustAdd(t, tkB, putTool(&ranB), toolkit.SessionBound())
	ncA := natstest.Connect(t, es)
	jsA := natstest.JS(t, ncA)
	serve(t, ncA, tkA, &bus.WorkerOptions{Instance: "a", Sessions: &bus.SessionsOptions{JetStream: jsA, ProbeTimeout: 800 * time.Millisecond}})
	kv, err := jsA.KeyValue(ctxT(t), wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	key, err := wire.SessionKey(toolkit.SessionScope("", "s"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctxT(t), key, []byte("ghost")); err != nil {
		t.Fatal(err)
	}
	// ghost is frozen: subscribed to its probe subject, it never answers.
	ghost := natstest.Connect(t, es)
	if _, err := ghost.Subscribe(wire.SubjectPinnedPrefix+"ghost", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	if err := ghost.Flush(); err != nil {
		t.Fatal(err)
	}
	// Heartbeats every hb, but a stall only after 5s: a loaded machine
	// may leave a call's frames 3 hb apart (the default stall), while a
	// final dropped as an old frame still ends the call worker_lost.
	c := newClient(t, natstest.Connect(t, es), &bus.ClientOptions{MaxAttempts: 1, Heartbeat: hb, StallTimeout: 5 * time.Second})
	return int(ncA.MaxPayload()), func(input map[string]any) (*toolkit.Response, int64) {
		done := make(chan *toolkit.Response, 1)
		go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: "s", Input: input}) }()
		time.Sleep(200 * time.Millisecond) // a is probing ghost, sending heartbeats
		serve(t, natstest.Connect(t, es), tkB, &bus.WorkerOptions{Instance: "b"})
		time.Sleep(200 * time.Millisecond)
		tkA.Remove("put")
		r := <-done
		return r, ranB.Load()
	}
}

// TestUnservedAfterHeartbeats: a call passed on by sender.unserved after
// the first worker sent heartbeats (seq 1..n) carries Toolbus-Seq-After,
// and the worker that runs it numbers its frames after them: numbered
// afresh, its final would be dropped as an old frame and the call, which
// ran, end worker_lost at the stall timeout (5s here: the default, 3
// heartbeats, ended calls on a loaded machine before they were passed
// on).
func TestUnservedAfterHeartbeats(t *testing.T) {
	_, call := slowRouteFleet(t, 50*time.Millisecond)
	r, ranB := call(map[string]any{"value": "x"})
	if r.State != toolkit.StateSuccess || r.Text() != "kept" {
		t.Fatalf("put passed on from a to b after a's heartbeats (ran on b %d times): %s %s %q", ranB, r.State, r.Code, r.Text())
	}
}

// TestUnservedPassOnFails: a request that fits max_payload as the caller
// sent it may not fit with the headers a pass-on adds (ErrMaxPayload): the
// call is then answered where it is (not_found), not silenced and left to
// the caller's stall timeout (worker_lost) for a call that ran nowhere.
func TestUnservedPassOnFails(t *testing.T) {
	max, call := slowRouteFleet(t, 0) // default heartbeat: none sent before the pass-on
	r, ranB := call(map[string]any{"value": strings.Repeat("x", max-100)})
	if r.Code == toolkit.CodeWorkerLost {
		t.Fatalf("a call too large to pass on (b ran %d): %s %s %q; want an immediate answer (e.g. not_found/unavailable), not the stall timeout", ranB, r.State, r.Code, r.Text())
	}
}
