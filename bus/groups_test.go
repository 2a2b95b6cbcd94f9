package bus_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// recordingState is a GroupState that remembers the minimum revisions
// asked of it.
type recordingState struct {
	toolkit.GroupState
	mu   sync.Mutex
	mins []uint64
}

func (r *recordingState) Load(ctx context.Context, session string, minRevision uint64) ([]string, uint64, bool, error) {
	r.mu.Lock()
	r.mins = append(r.mins, minRevision)
	r.mu.Unlock()
	return r.GroupState.Load(ctx, session, minRevision)
}

// TestGroupRevisionTravels: reset_tools runs on worker A, the next call of
// the session runs on worker B, which is asked for at least the revision
// A returned.
func TestGroupRevisionTravels(t *testing.T) {
	s := natstest.Embedded(t, false)
	shared := toolkit.NewMemoryState()
	newTK := func(state toolkit.GroupState) *toolkit.Toolkit {
		tk := toolkit.New(&toolkit.Options{State: state})
		if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools."}); err != nil {
			t.Fatal(err)
		}
		mustAdd(t, tk, toolkit.Func("secret", "Secret.", func(ctx context.Context, in struct{}) (string, error) { return "s3cret", nil }), toolkit.InGroup("vault"))
		return tk
	}
	c := newClient(t, natstest.Connect(t, s), nil)

	a, err := bus.Serve(natstest.Connect(t, s), newTK(shared), &bus.WorkerOptions{Instance: "A"})
	if err != nil {
		t.Fatal(err)
	}
	reset := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "rev-1", Name: toolkit.MetaToolName, Session: "sess", Input: map[string]any{"vault": true}})
	if reset.State != toolkit.StateSuccess || reset.Metadata[wire.MetaWorker] != "A" {
		t.Fatalf("reset_tools: %+v", reset)
	}
	if c.Revision("sess") == 0 {
		t.Fatal("the client did not remember the session's groups revision")
	}
	stateB := &recordingState{GroupState: shared}
	serve(t, natstest.Connect(t, s), newTK(stateB), &bus.WorkerOptions{Instance: "B"})
	if err := a.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	resp := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "rev-2", Name: "secret", Session: "sess"})
	if resp.State != toolkit.StateSuccess || resp.Metadata[wire.MetaWorker] != "B" {
		t.Fatalf("group tool on the other worker: %+v", resp)
	}
	stateB.mu.Lock()
	defer stateB.mu.Unlock()
	if !slices.Contains(stateB.mins, c.Revision("sess")) {
		t.Fatalf("worker B was asked for revisions %v, want %d", stateB.mins, c.Revision("sess"))
	}
}
