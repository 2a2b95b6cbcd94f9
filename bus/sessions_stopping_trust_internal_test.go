package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStoppingWorkerServesNoSessionFromMemory: a stopping worker no
// longer answers probes, so another worker takes its sessions over at
// once (no responders), not after a probe timeout. A call of such a
// session that still reached the stopping worker (a client remembering
// its pin, while the stop waited for calls it was probed for) was run
// there from its memory of holding the session (trust), beside the
// worker that now held it: the session's state split over two workers,
// and neither final said so. It is passed on to the session's worker.
func TestStoppingWorkerServesNoSessionFromMemory(t *testing.T) {
	s := natstest.Embedded(t, false)
	var mu sync.Mutex
	ran := map[string]int{}
	serve := func(instance string, probe time.Duration) *Worker {
		tk := toolkit.New(nil)
		if err := tk.Add(toolkit.Raw("put", "Put.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			mu.Lock()
			ran[instance]++
			mu.Unlock()
			return w.Write(toolkit.Text("put on " + instance))
		}), toolkit.SessionBound()); err != nil {
			t.Fatal(err)
		}
		nc := natstest.Connect(t, s)
		w := serve(t, nc, tk, &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc), ProbeTimeout: probe}})
		return w
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// a trusts its memory of holding a session for half its probe
	// timeout: long here, so that the memory is fresh throughout.
	a := serve("a", time.Minute)
	client := func() *Client {
		cl, err := NewClient(natstest.Connect(t, s), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		return cl
	}
	first := client()
	call := toolkit.ToolCall{Name: "put", Session: "s"}
	if r := first.Invoke(ctx, call); r.Metadata[wire.MetaSessionWorker] != "a" {
		t.Fatalf("first call: %s %q %v", r.State, r.Text(), r.Metadata)
	}
	serve("b", 0)

	// a's stop waits for a call another worker probed it for, which is
	// on its way: tools.pinned.a.> is still subscribed meanwhile.
	a.aff.mu.Lock()
	a.aff.expected = map[string]probeNote{"_INBOX.on-its-way": {at: time.Now().Add(time.Hour), n: 1}}
	a.aff.mu.Unlock()
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop(ctx) }()
	// And its tool subscriptions drained (the server has dropped them
	// from the queue group): until then the group may still hand a the
	// next call, which a, still holding the session, rightly runs.
	natstest.WaitFor(t, "a's stop waiting for the probed call, out of the queue group", func() bool {
		if !a.aff.waitingForwards() {
			return false
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		for _, subs := range a.subs {
			for _, s := range subs {
				if s != nil && s.IsValid() {
					return false
				}
			}
		}
		return true
	})

	// Another caller of the session reaches b through the queue group: a
	// answers no probe, so b takes the session over.
	if r := client().Invoke(ctx, call); r.Metadata[wire.MetaSessionWorker] != "b" || r.Metadata[wire.MetaSessionMovedFrom] != "a" {
		t.Fatalf("call through the queue group: %s %q %v", r.State, r.Text(), r.Metadata)
	}
	// The first caller still sends the session's calls to a.
	r := first.Invoke(ctx, call)
	mu.Lock()
	na, nb := ran["a"], ran["b"]
	mu.Unlock()
	if r.State != toolkit.StateSuccess || r.Metadata[wire.MetaSessionWorker] != "b" || na != 1 || nb != 2 {
		t.Fatalf("a call sent to a after b took the session over: %s %q %v; ran %d times on a, %d on b; want it run on b",
			r.State, r.Text(), r.Metadata, na, nb)
	}

	a.aff.mu.Lock()
	clear(a.aff.expected)
	a.aff.mu.Unlock()
	if err := <-stopped; err != nil {
		t.Fatalf("a's stop: %v", err)
	}
}
