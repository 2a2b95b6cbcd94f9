package bus_test

import (
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionsBucketDeleted: a sessions bucket deleted under running
// workers (nats kv rm, a JetStream reset) is made again by the first
// worker that misses it, with the configured TTL, and sessions are pinned
// again. Until the workers restarted, every session-bound call ran
// wherever it landed, unpinned. Several sessions' first calls after the
// deletion run at once on both workers, so both may make the bucket
// again at the same moment: neither fails.
func TestSessionsBucketDeleted(t *testing.T) {
	s := natstest.Embedded(t, false)
	affinityWorker(t, s, "w1")
	affinityWorker(t, s, "w2")
	js := natstest.JS(t, natstest.Connect(t, s))
	ctx := ctxT(t)

	// Each call from a new client, which knows no pin: it reaches either
	// worker through the queue group.
	call := func(session, tool, value string) *toolkit.Response {
		c := newClient(t, natstest.Connect(t, s), nil)
		defer c.Close()
		return c.Invoke(ctx, toolkit.ToolCall{Name: tool, Session: session, Input: map[string]any{"value": value}})
	}
	r := call("s0", "put", "before")
	if r.Metadata[wire.MetaSessionWorker] == nil {
		t.Fatalf("put before the deletion: %+v", r)
	}
	if err := js.DeleteKeyValue(ctx, wire.BucketSessions); err != nil {
		t.Fatal(err)
	}
	// A worker serves a session it found its own a moment ago without
	// reading the pin again (for less than its probe timeout, 1s here):
	// past that, both read the bucket.
	time.Sleep(1500 * time.Millisecond)

	sessions := []string{"s0", "s1", "s2", "s3", "s4", "s5"}
	pinned := make([]string, len(sessions))
	var wg sync.WaitGroup
	for i, session := range sessions {
		wg.Go(func() {
			r := call(session, "put", session)
			if r.Text() != "kept" {
				t.Errorf("%s: put after the deletion: %+v", session, r)
			}
			pinned[i], _ = r.Metadata[wire.MetaSessionWorker].(string)
		})
	}
	wg.Wait()
	for i, session := range sessions {
		if pinned[i] == "" {
			t.Fatalf("%s: not pinned after the bucket was deleted", session)
		}
		for range 6 {
			r := call(session, "get", "")
			if r.Text() != session || r.Metadata[wire.MetaWorker] != pinned[i] || r.Metadata[wire.MetaSessionWorker] != pinned[i] {
				t.Fatalf("%s (pinned to %s): %+v", session, pinned[i], r)
			}
		}
	}

	b, err := js.KeyValue(ctx, wire.BucketSessions)
	if err != nil {
		t.Fatalf("the sessions bucket: %v", err)
	}
	st, err := b.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := bus.SessionsBucketConfig(0, 0).TTL; st.TTL() != want {
		t.Errorf("the bucket made again has TTL %v, want %v", st.TTL(), want)
	}
	for i, session := range sessions {
		key, _ := wire.SessionKey(session)
		if e, err := b.Get(ctx, key); err != nil || string(e.Value()) != pinned[i] {
			t.Errorf("%s: pin in the bucket: %v, want %s", session, err, pinned[i])
		}
	}
}
