package bus

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestMovedFromLiveWorkerNotGone: in a fleet whose workers serve
// different session-bound tools, a session pinned to a, which does not
// serve browse, moves to m for its call of browse (a passes it on), as
// README says. The final told the model, and m's log the operator, that
// a "is gone", while a was serving on; it now says a does not serve the
// tool. A session whose worker stopped still reads gone.
func TestMovedFromLiveWorkerNotGone(t *testing.T) {
	s := natstest.Embedded(t, false)
	serveOne := func(instance, name string) *Worker {
		tk := toolkit.New(nil)
		if err := tk.Add(toolkit.Raw(name, name+".", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return w.Write(toolkit.Text(name + " on " + instance))
			}), toolkit.SessionBound()); err != nil {
			t.Fatal(err)
		}
		nc := natstest.Connect(t, s)
		return serve(t, nc, tk, &WorkerOptions{Instance: instance, Sessions: &SessionsOptions{JetStream: natstest.JS(t, nc)}})
	}
	a := serveOne("a", "put")
	serveOne("m", "browse")
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"}); r.Metadata[wire.MetaSessionWorker] != "a" {
		t.Fatalf("put: %s %q %v", r.State, r.Text(), r.Metadata)
	}
	r := c.Invoke(ctx, toolkit.ToolCall{Name: "browse", Session: "s"})
	if r.State != toolkit.StateSuccess || r.Metadata[wire.MetaSessionWorker] != "m" || r.Metadata[wire.MetaSessionMovedFrom] != "a" {
		t.Fatalf("browse: %s %q %v", r.State, r.Text(), r.Metadata)
	}
	if strings.Contains(r.Text(), "gone") || !strings.Contains(r.Text(), movedText("a", "m", false, "browse")) {
		t.Errorf("browse moved the session from a, which serves on: %q", r.Text())
	}
	// Back to a for put, now from a worker that stopped: gone.
	if r := c.Invoke(ctx, toolkit.ToolCall{Name: "put", Session: "s"}); r.Metadata[wire.MetaSessionWorker] != "a" {
		t.Fatalf("put again: %s %q %v", r.State, r.Text(), r.Metadata)
	}
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	r = c.Invoke(ctx, toolkit.ToolCall{Name: "browse", Session: "s"})
	if r.Metadata[wire.MetaSessionMovedFrom] != "a" || !strings.Contains(r.Text(), movedText("a", "m", false, "")) {
		t.Errorf("browse after a stopped: %q %v", r.Text(), r.Metadata)
	}
}
