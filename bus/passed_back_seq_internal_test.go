package bus

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestPassedBackAfterHeartbeats: a call whose tool is removed after the
// worker sent it heartbeats, and which no other worker serves, is
// answered not_found by the worker that passed it on, with a final
// numbered after those heartbeats: numbered 1, the caller dropped it as
// an old frame and waited for its stall timeout (worker_lost).
func TestPassedBackAfterHeartbeats(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	w := serve(t, natstest.Connect(t, s), tk, &WorkerOptions{Instance: "a"})
	w.beforeDispatch = func(s *sender) {
		// Heartbeats went out while the call waited here.
		natstest.WaitFor(t, "a heartbeat of the held call", func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.seq >= 2
		})
		tk.Remove(s.call.Name)
	}
	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{Heartbeat: MinHeartbeat, StallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := c.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"text": "x"}})
	if r.Code != toolkit.CodeNotFound {
		t.Fatalf("%s %s %q, want not_found", r.State, r.Code, r.Text())
	}
}
