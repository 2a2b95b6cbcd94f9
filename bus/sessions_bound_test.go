package bus_test

import (
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A full sessions bucket pins no new session: its calls still run, on
// the worker that has them, and the sessions pinned before keep their
// worker.
func TestFullSessionsBucketRunsUnpinned(t *testing.T) {
	s := natstest.Embedded(t, true)
	tk := storeToolkit(t)
	nc := natstest.Connect(t, s)
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1",
		Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc), MaxSessions: 50}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(ctxT(t)) })
	c := newClient(t, natstest.Connect(t, s), nil)
	b, err := natstest.JS(t, nc).KeyValue(ctxT(t), wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	pinned := 0
	for n := range 60 {
		session := fmt.Sprintf("s%d", n)
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put", Session: session, Input: map[string]any{"value": session}})
		if r.State != toolkit.StateSuccess {
			t.Fatalf("put in session %s: %+v", session, r)
		}
		key, err := wire.SessionKey(toolkit.SessionScope("", session))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Get(ctxT(t), key); err == nil {
			pinned++
		}
	}
	if pinned != 50 {
		t.Errorf("%d of 60 sessions pinned in a bucket of 50", pinned)
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "get", Session: "s0"}); r.Text() != "s0" {
		t.Errorf("a session pinned before the bucket filled: %+v", r)
	}
}
