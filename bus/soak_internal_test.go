package bus

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// soak is a worker with every path on (groups in KV, durable calls, kept
// results, session affinity) and the clients that churn it.
type soak struct {
	t     *testing.T
	s     *embedded.Server
	tk    *toolkit.Toolkit
	w     *Worker
	c     *Client          // the long-lived anonymous client
	ids   int              // identities made so far
	calls jetstream.Stream // the calls stream: its consumers
	gone  *atomic.Int32    // slow calls that ended only as their callers were gone
}

// soakMaxSessions is the clients' ClientOptions.MaxSessions.
const soakMaxSessions = 50

func newSoak(t *testing.T) *soak {
	s := natstest.Embedded(t, false)
	wnc := natstest.Connect(t, s)
	js := natstest.JS(t, wnc)
	state, err := NewKVState(natstest.Ctx(t), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools."}); err != nil {
		t.Fatal(err)
	}
	add := func(tool *toolkit.Tool, opts ...toolkit.Option) {
		if err := tk.Add(tool, opts...); err != nil {
			t.Fatal(err)
		}
	}
	type in struct {
		Text string `json:"text"`
	}
	add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in in) (string, error) { return in.Text, nil }), toolkit.ReadOnly())
	add(toolkit.Func("secret", "Secret.", func(ctx context.Context, in struct{}) (string, error) { return "s3cret", nil }), toolkit.InGroup("vault"))
	// slow is made only to be cancelled or to pass its deadline: it ends
	// then, not on its own after a while (that ended cancels that came
	// late on a loaded machine in success), and a call it sees end only
	// as its caller is gone (toolkit.ErrCallerGone) had no cancel reach
	// it (settled). Past the guard it ends, so that a lost cancel shows in
	// settled, and the worker stops.
	gone := &atomic.Int32{}
	add(toolkit.Func("slow", "Waits for its end.", func(ctx context.Context, in struct{}) (string, error) {
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), toolkit.ErrCallerGone) {
				gone.Add(1)
			}
			return "", ctx.Err()
		case <-time.After(3 * natstest.Guard):
			return "", errors.New("slow: never cancelled")
		}
	}))
	add(toolkit.Func("pinned", "Session-bound.", func(ctx context.Context, in struct{}) (string, error) { return "here", nil }), toolkit.SessionBound())
	add(toolkit.Raw("stream", "Streams.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		for i := range 5 {
			if err := w.Write(toolkit.Text(fmt.Sprint(i))); err != nil {
				return err
			}
		}
		return nil
	}))
	add(toolkit.Raw("ask", "Asks its caller.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		v, err := toolkit.Ask(ctx, w, toolkit.MethodElicit, map[string]any{"message": "ok?"})
		if err != nil {
			return err
		}
		return w.Write(toolkit.Text(fmt.Sprint(v)))
	}))
	// Tombstones live 5 s, not the default 30 s, so that the rounds'
	// settle within the guard: not less, as a cancel heard before its
	// call was read (the call subscription's reader a moment behind the
	// cancel's on a loaded machine) interrupts the call only while its
	// tombstone lives; at 100 ms a cancelled slow call ran its 10 s.
	w, err := Serve(wnc, tk, &WorkerOptions{Instance: "soak",
		TombstoneTTL: 5 * time.Second, AbandonAfter: 200 * time.Millisecond,
		Durable:  &DurableOptions{JetStream: js, ConsumerIdle: time.Second},
		Results:  &ResultsOptions{JetStream: js},
		Sessions: &SessionsOptions{JetStream: js}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	calls, err := js.Stream(natstest.Ctx(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	sk := &soak{t: t, s: s, tk: tk, w: w, calls: calls, gone: gone}
	sk.c = sk.client("")
	t.Cleanup(func() { sk.c.Close() })
	return sk
}

func (sk *soak) client(identity string) *Client {
	nc, err := sk.s.Connect(nats.CustomInboxPrefix(strings.TrimSuffix(wire.Inbox(identity), ".")))
	if err != nil {
		sk.t.Fatal(err)
	}
	// The stall timeout is a guard, not a measure: a busy machine may
	// hold the worker silent longer than a few heartbeats.
	c, err := NewClient(nc, &ClientOptions{Identity: identity, Heartbeat: 50 * time.Millisecond, StallTimeout: 30 * time.Second, MaxSessions: soakMaxSessions,
		Asker: func(ctx context.Context, method string, params any) (any, error) {
			return map[string]any{"action": "accept"}, nil
		}})
	if err != nil {
		sk.t.Fatal(err)
	}
	return c
}

// round makes n calls of every kind, 8 at a time, from the long-lived
// client and from identities of the round's own (closed at its end).
func (sk *soak) round(n int) {
	t := sk.t
	ctx := natstest.Ctx(t)
	const callers = 8
	var clients []*Client
	for range callers {
		sk.ids++
		clients = append(clients, sk.client(fmt.Sprintf("id%d", sk.ids)))
	}
	var wg sync.WaitGroup
	var fail sync.Once
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += callers {
				c := sk.c
				if i%2 == 1 {
					c = clients[g]
				}
				session := fmt.Sprintf("s%d-%d", sk.ids, i)
				if err := sk.one(ctx, c, i, session); err != nil {
					fail.Do(func() { t.Error(err) })
					return
				}
			}
		}()
	}
	// Tools come and go meanwhile.
	for i := range n / 50 {
		name := fmt.Sprintf("tmp%d_%d", sk.ids, i)
		if err := sk.tk.Add(toolkit.Func(name, "Comes and goes.", func(ctx context.Context, in struct{}) (string, error) { return "", nil })); err != nil {
			t.Fatal(err)
		}
		sk.c.Invoke(ctx, toolkit.ToolCall{Name: name})
		sk.tk.Remove(name)
	}
	wg.Wait()
	for _, c := range clients {
		c.Close()
		c.nc.Close()
	}
}

func (sk *soak) one(ctx context.Context, c *Client, i int, session string) error {
	want := func(r *toolkit.Response, code toolkit.Code, what string) error {
		if r.Code != code {
			return fmt.Errorf("%s: want %q, got %+v", what, code, r)
		}
		return nil
	}
	switch (i / 2) % 12 { // both clients make every kind
	case 0:
		return want(c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Session: session, Input: map[string]any{"text": "hi"}}), "", "echo")
	case 1:
		if err := want(c.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session, Input: map[string]any{"vault": true}}), "", "reset_tools"); err != nil {
			return err
		}
		return want(c.Invoke(ctx, toolkit.ToolCall{Name: "secret", Session: session}), "", "secret")
	case 2:
		return want(c.Invoke(ctx, toolkit.ToolCall{Name: "pinned", Session: session}), "", "pinned")
	case 3:
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(5*time.Millisecond, cancel)
		r := c.Invoke(cctx, toolkit.ToolCall{Name: "slow", Session: session})
		cancel()
		if r.Code != toolkit.CodeInterrupted {
			return fmt.Errorf("cancelled: %+v", r)
		}
	case 4:
		dctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		r := c.Invoke(dctx, toolkit.ToolCall{Name: "slow"})
		cancel()
		if r.Code != toolkit.CodeTimeout {
			return fmt.Errorf("deadline: %+v", r)
		}
	case 5:
		// not_found from a worker, unavailable from no responders.
		if r := c.Invoke(ctx, toolkit.ToolCall{Name: "nosuch"}); r.Code != toolkit.CodeNotFound && r.Code != toolkit.CodeUnavailable {
			return fmt.Errorf("unknown tool: %+v", r)
		}
	case 6:
		id := fmt.Sprintf("kept%d-%s", i, session)
		if err := want(c.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "echo", KeepResult: true, Input: map[string]any{"text": "k"}}), "", "kept"); err != nil {
			return err
		}
		return want(c.Result(ctx, id), "", "result")
	case 7:
		return want(c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Durable: true, Session: session, Input: map[string]any{"text": "d"}}), "", "durable")
	case 8:
		return want(c.Invoke(ctx, toolkit.ToolCall{Name: "stream", Session: session}), "", "stream")
	case 9:
		return want(c.Invoke(ctx, toolkit.ToolCall{Name: "ask", Session: session}), "", "ask")
	case 10:
		// A cancel of a call never made: a tombstone.
		if err := c.Cancel(fmt.Sprintf("ghost%d-%s", i, session)); err != nil {
			return err
		}
	case 11:
		if _, err := c.List(ctx, session); err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return nil
}

// soakSizes are the sizes of the structures a long-running worker and
// client keep.
type soakSizes map[string]int

func (sk *soak) sizes() soakSizes {
	w, c := sk.w, sk.c
	z := soakSizes{}
	w.mu.Lock()
	z["w.calls"], z["w.tombs"], z["w.tombQ"], z["w.tombsBy"] = len(w.calls), len(w.tombs), len(w.tombQ), len(w.tombsBy)
	z["w.subs"], z["w.draining"], z["w.asks"] = len(w.subs), len(w.draining), len(w.asks)
	z["w.clock.calls"] = len(w.clock.calls) // the clock's scratch, resliced under w.mu
	w.mu.Unlock()
	w.passed.mu.Lock()
	z["w.passed"], z["w.passed.order"] = len(w.passed.calls), len(w.passed.order)
	w.passed.mu.Unlock()
	w.lists.mu.Lock()
	z["w.lists"] = len(w.lists.by)
	w.lists.mu.Unlock()
	w.aff.mu.Lock()
	z["w.aff.owned"] = len(w.aff.owned)
	w.aff.mu.Unlock()
	w.dur.mu.Lock()
	z["w.dur.loops"], z["w.dur.live"] = len(w.dur.loops), len(w.dur.live)
	w.dur.mu.Unlock()
	w.clock.mu.Lock()
	z["w.clock.queue"] = len(w.clock.queue) - w.clock.head
	w.clock.mu.Unlock()
	z["w.inbox"] = len(w.inbox)
	z["w.slots"] = len(w.slots)
	c.mu.Lock()
	z["c.pending"], z["c.acks"], z["c.retrying"], z["c.bound"] = len(c.pending), len(c.acks), len(c.retrying), len(c.bound)
	z["c.revs"], z["c.pins"] = c.revs.order.Len(), c.pins.order.Len()
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Guard)
	defer cancel()
	info, err := sk.calls.Info(ctx)
	if err != nil {
		sk.t.Fatal(err)
	}
	z["consumers"] = info.State.Consumers
	return z
}

// ownGoroutines counts the goroutines whose stacks are not the
// embedded nats-server's.
func ownGoroutines() int {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, "nats-server") {
			n++
		}
	}
	return n
}

// settled waits until what a round left behind is let go: the sizes that
// must come back to the baseline have, the other bounds hold, and no
// more goroutines of ours run than then (a few more may be on their way
// out). It fails the test after a generous guard and reports the sizes.
func (sk *soak) settled(base soakSizes, baseG int) soakSizes {
	sk.t.Helper()
	back := []string{"w.calls", "w.asks", "w.passed", "w.lists", "w.clock.queue", "w.clock.calls", "w.inbox", "w.slots",
		"w.subs", "w.dur.loops", "w.dur.live", "w.tombs", "w.tombQ", "w.tombsBy", "consumers",
		"c.pending", "c.acks", "c.retrying"}
	deadline := time.Now().Add(time.Minute)
	for {
		// The ghost cancels' tombstones expire; the next cancel prunes them.
		sk.c.Cancel("prune")
		z, g := sk.sizes(), ownGoroutines()
		var off []string
		for _, k := range back {
			if z[k] > base[k] {
				off = append(off, fmt.Sprintf("%s %d (was %d)", k, z[k], base[k]))
			}
		}
		// Removed tools' subscriptions still draining are let go at the
		// next removal.
		if z["w.draining"] > 8 {
			off = append(off, fmt.Sprintf("w.draining %d", z["w.draining"]))
		}
		if z["c.revs"] > soakMaxSessions || z["c.pins"] > soakMaxSessions || z["c.bound"] > maxBoundTools {
			off = append(off, fmt.Sprintf("c.revs %d, c.pins %d, c.bound %d", z["c.revs"], z["c.pins"], z["c.bound"]))
		}
		if g > baseG+4 {
			off = append(off, fmt.Sprintf("goroutines %d (was %d)", g, baseG))
		}
		if n := sk.gone.Load(); n > 0 {
			sk.t.Fatalf("%d slow calls, cancelled or past their deadline, ended only as their callers were gone: no cancel reached them", n)
		}
		if len(off) == 0 {
			return z
		}
		if time.Now().After(deadline) {
			sk.t.Fatalf("left behind after the round: %s", strings.Join(off, ", "))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestSoak churns a worker with every path on and its clients through
// calls of every kind (sessions, identities, cancels, deadlines, unknown
// tools, group activations, session-bound tools, durable calls, kept
// results, requests to the caller, listings, tools added and removed),
// then checks that what the worker and the clients hold comes back to
// what it held after a warm-up round, at two levels of churn. Heap in use
// is logged, not asserted (the embedded server shares it).
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	sk := newSoak(t)
	sk.round(240)
	var base soakSizes
	var baseG int
	natstest.WaitFor(t, "the warm-up round to settle: no call left, the calls stream holding only the served tools' consumers", func() bool {
		sk.c.Cancel("prune")
		base, baseG = sk.sizes(), ownGoroutines()
		return base["w.calls"] == 0 && base["c.pending"] == 0 && base["w.tombs"] <= 1 && base["consumers"] == base["w.dur.loops"]
	})
	t.Logf("base: goroutines %d (ours %d), heap %d KiB, %v", runtime.NumGoroutine(), baseG, heapInUse()>>10, base)
	for _, n := range []int{600, 1200} {
		sk.round(n)
		z := sk.settled(base, baseG)
		t.Logf("after %d calls: goroutines %d (ours %d), heap %d KiB, %v", n, runtime.NumGoroutine(), ownGoroutines(), heapInUse()>>10, z)
	}
}
