package permission

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApprovedCallRetriedAfterOverload: the approved call of an
// idempotent tool, sent again, finds its worker full (overloaded) and the
// client sends it once more, as it does such calls. That attempt is the
// same call: it runs with the approval. It went under an attempt id
// (c1-r2) of its own, which had no approval: the call ended
// approval_required again, naming c1-r2 for approval, while the approval
// of c1 stayed unused.
func TestApprovedCallRetriedAfterOverload(t *testing.T) {
	s := natstest.Embedded(t, false)
	g, err := NewGuard(kvStore(t, natstest.JS(t, natstest.Connect(t, s)), nil), &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	tk.Use(Middleware(g))
	var deploys int
	var mu sync.Mutex
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(_ context.Context, in deployIn) (string, error) {
		mu.Lock()
		deploys++
		mu.Unlock()
		return "deployed to " + in.Env, nil
	}), toolkit.WithIdempotency(toolkit.Idempotent)); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	if err := tk.Add(toolkit.Func("hold", "Hold the worker's one slot.", func(ctx context.Context, _ lookupIn) (string, error) {
		close(started)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "held", nil
	}), toolkit.ReadOnly()); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	wnc := natstest.Connect(t, s)
	wk, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Instance: "w1", MaxInFlight: 1,
		OnFinal: func(tool string, _ toolkit.State, code toolkit.Code, _ time.Duration) {
			if tool == "deploy" && code == toolkit.CodeOverloaded {
				once.Do(func() { close(release) }) // the slot frees for the next attempt
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wk.Stop(context.Background()) })
	c, err := bus.NewClient(natstest.Connect(t, s), &bus.ClientOptions{MaxAttempts: 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	call := toolkit.ToolCall{ID: "c1", Name: "deploy", Session: "sess", Input: map[string]any{"env": "prod"}}
	wantResp(t, c.Invoke(natstest.Ctx(t), call), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	if _, err := g.Approve(natstest.Ctx(t), "sess", "c1", "alice"); err != nil {
		t.Fatal(err)
	}
	go c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "h", Name: "hold", Input: map[string]any{"key": "k"}})
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the holding call did not start")
	}
	r := c.Invoke(natstest.Ctx(t), call)
	mu.Lock()
	n := deploys
	mu.Unlock()
	if r.State != toolkit.StateSuccess || n != 1 {
		t.Fatalf("the approved call, retried after overloaded: %s %s %q, metadata %v (deploys %d)", r.State, r.Code, r.Text(), r.Metadata, n)
	}
}
