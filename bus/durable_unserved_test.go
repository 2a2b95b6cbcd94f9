package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// invokeGuarded runs a call without a deadline of its own; the test fails
// when it has not ended within guard (a call nothing answers would wait
// for good).
func invokeGuarded(t *testing.T, c *bus.Client, call toolkit.ToolCall) *toolkit.Response {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, call) }()
	timer := time.NewTimer(guard)
	defer timer.Stop()
	select {
	case r := <-done:
		return r
	case <-timer.C:
		t.Fatalf("the durable call of %q did not end within %s", call.Name, guard)
		return nil
	}
}

// TestDurableUnserved: a durable call of a tool no worker has served (its
// consumer of the calls stream does not exist) ends not_found at once, as
// on the core path, and leaves nothing in the calls stream. A worker that
// starts serving the tool then runs its next durable call. A served tool
// whose workers are all down keeps its durable calls queued until a worker
// is back, also for a client that has not seen its consumer yet.
func TestDurableUnserved(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	w1, _ := durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, natstest.Connect(t, s), nil)
	js := natstest.JS(t, natstest.Connect(t, s))
	stream := func() (msgs, last uint64) {
		t.Helper()
		st, err := js.Stream(ctxT(t), wire.StreamCalls)
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().State.Msgs, st.CachedInfo().State.LastSeq
	}
	if r := invokeGuarded(t, c, toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "served"}}); r.Text() != "served" {
		t.Fatalf("a served tool's durable call: %+v", r)
	}

	// The served call's acknowledgement may follow its final.
	natstest.WaitFor(t, "the served call acknowledged", func() bool { msgs, _ := stream(); return msgs == 0 })
	_, before := stream()
	core := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "ehco", Input: map[string]any{"text": "typo"}})
	r := invokeGuarded(t, c, toolkit.ToolCall{Name: "ehco", Durable: true, Input: map[string]any{"text": "typo"}})
	want := toolkit.NotFound("ehco").Message
	if r.Code != toolkit.CodeNotFound || r.Text() != want || core.Code != r.Code || core.Text() != r.Text() {
		t.Fatalf("a durable call of a tool nobody serves: %s %q; on the core path: %s %q; want not_found %q", r.Code, r.Text(), core.Code, core.Text(), want)
	}
	if msgs, last := stream(); msgs != 0 || last != before {
		t.Fatalf("the calls stream after a durable call of a tool nobody serves: %d calls, last seq %d (was %d)", msgs, last, before)
	}

	// A worker starts serving the tool right after a not_found.
	tk2 := toolkit.New(nil)
	mustAdd(t, tk2, toolkit.Func("ehco", "Echo, spelt as called.",
		func(ctx context.Context, in echoIn) (string, error) { return "ehco: " + in.Text, nil }))
	durableWorker(t, s, tk2, 0, "w2")
	if r := invokeGuarded(t, c, toolkit.ToolCall{Name: "ehco", Durable: true, Input: map[string]any{"text": "now"}}); r.Text() != "ehco: now" {
		t.Fatalf("a durable call once a worker serves the tool: %+v", r)
	}

	// Every worker serving echo is down: the call waits in the queue.
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := w1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := newClient(t, natstest.Connect(t, s), nil)
	done := make(chan *toolkit.Response, 1)
	go func() {
		done <- fresh.Invoke(ctx, toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "waited"}})
	}()
	natstest.WaitFor(t, "the call queued", func() bool { msgs, _ := stream(); return msgs == 1 })
	durableWorker(t, s, tk, 0, "w3")
	if r := <-done; r.Text() != "waited" || r.Metadata[wire.MetaWorker] != "w3" {
		t.Fatalf("a durable call queued while no worker served its tool: %+v", r)
	}
}

// TestDurableCoreOnlyTool: a tool served only by workers without the
// durable path (its calls stream made by another worker's) can never
// take a durable call: it ends unavailable at once, saying so, not
// not_found (the tool exists) and not queued for good. Each call asks
// afresh (a new client): the answer must not depend on which worker
// answers a list request.
func TestDurableCoreOnlyTool(t *testing.T) {
	s := natstest.Embedded(t, false)
	other := toolkit.New(nil)
	mustAdd(t, other, toolkit.Func("other", "Other.", func(context.Context, struct{}) (string, error) { return "ok", nil }))
	durableWorker(t, s, other, 0, "durable")
	core := toolkit.New(nil)
	mustAdd(t, core, echoTool())
	serve(t, natstest.Connect(t, s), core, &bus.WorkerOptions{Instance: "core"})
	for i := range 8 {
		c := newClient(t, natstest.Connect(t, s), nil)
		r := invokeGuarded(t, c, toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "x"}})
		if r.Code != toolkit.CodeUnavailable || !strings.Contains(r.Text(), "durable") {
			t.Fatalf("call %d: %s %s %q, want unavailable saying no worker serving echo runs the durable path", i, r.State, r.Code, r.Text())
		}
	}
}

// TestDurableServedBeforeCoreNow: a tool once served on the durable path
// (its consumer stays) and now served only by workers without it: a
// durable call of it would wait in the queue for good, nothing pulls it.
// Once it has waited a stall timeout untaken, the client looks at the
// fleet, and it ends unavailable as for a tool never served durably; the
// call left in the queue does not run when a durable worker comes back.
func TestDurableServedBeforeCoreNow(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int32
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("count", "Count its runs.", func(context.Context, struct{}) (string, error) {
		runs.Add(1)
		return "ran", nil
	}))
	w1, _ := durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: 300 * time.Millisecond})
	if r := invokeGuarded(t, c, toolkit.ToolCall{Name: "count", Durable: true}); r.Text() != "ran" {
		t.Fatalf("a served tool's durable call: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := w1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "core"})
	for _, c := range []*bus.Client{c, newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: 300 * time.Millisecond})} {
		r := invokeGuarded(t, c, toolkit.ToolCall{Name: "count", Durable: true})
		if r.Code != toolkit.CodeUnavailable || !strings.Contains(r.Text(), "durable") {
			t.Fatalf("a durable call of a tool served now only without the durable path: %s %s %q, want unavailable", r.State, r.Code, r.Text())
		}
	}
	// A durable worker back: the calls left in the queue were cancelled.
	durableWorker(t, s, tk, 0, "w2")
	js := natstest.JS(t, natstest.Connect(t, s))
	natstest.WaitFor(t, "the queue emptied", func() bool {
		st, err := js.Stream(ctxT(t), wire.StreamCalls)
		return err == nil && st.CachedInfo().State.Msgs == 0
	})
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once (the first, served call)", n)
	}
}
