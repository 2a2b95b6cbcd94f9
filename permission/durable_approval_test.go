package permission

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// The approval flow says: approve, then send the same call again with the
// same id. A durable call re-sent so within the calls stream's dedup
// window was refused as a duplicate (DuplicateCallError) and never ran.
func TestDurableApprovedResend(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	g, err := NewGuard(kvStore(t, js, nil), &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	tk.Use(Middleware(g))
	var deploys atomic.Int64
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(_ context.Context, in deployIn) (string, error) {
		deploys.Add(1)
		return "deployed to " + in.Env, nil
	})); err != nil {
		t.Fatal(err)
	}
	wnc := natstest.Connect(t, s)
	wk, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: natstest.JS(t, wnc)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wk.Stop(context.Background()) })
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := natstest.Ctx(t)
	call := toolkit.ToolCall{ID: "d1", Name: "deploy", Session: "sess", Durable: true, Input: map[string]any{"env": "prod"}}

	r := c.Invoke(ctx, call)
	wantResp(t, r, toolkit.StateDenied, toolkit.CodeApprovalRequired, "d1")
	if _, err := g.Approve(ctx, "sess", "d1", "alice"); err != nil {
		t.Fatal(err)
	}
	r = c.Invoke(ctx, call) // "send the same call again, with the same id and input"
	if r.State != toolkit.StateSuccess || deploys.Load() != 1 {
		t.Fatalf("approved durable call re-sent: %s %s %q (deploys %d)", r.State, r.Code, r.Text(), deploys.Load())
	}
}

// The same re-send of a call to a durable-by-default tool was queued by
// the worker, dropped by the stream as a duplicate, and never answered:
// the caller waited for its deadline.
func TestDurableByDefaultApprovedResend(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	g, err := NewGuard(kvStore(t, js, nil), &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	tk.Use(Middleware(g))
	var deploys atomic.Int64
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(_ context.Context, in deployIn) (string, error) {
		deploys.Add(1)
		return "deployed to " + in.Env, nil
	}), toolkit.Durable()); err != nil {
		t.Fatal(err)
	}
	wnc := natstest.Connect(t, s)
	wk, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: natstest.JS(t, wnc)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wk.Stop(context.Background()) })
	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	call := toolkit.ToolCall{ID: "d2", Name: "deploy", Session: "sess", Input: map[string]any{"env": "prod"}}

	wantResp(t, c.Invoke(natstest.Ctx(t), call), toolkit.StateDenied, toolkit.CodeApprovalRequired, "d2")
	if _, err := g.Approve(natstest.Ctx(t), "sess", "d2", "alice"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	r := c.Invoke(ctx, call)
	if r.State != toolkit.StateSuccess || deploys.Load() != 1 {
		t.Fatalf("approved call re-sent: after %v: %s %s %q (deploys %d)", time.Since(start).Round(time.Millisecond), r.State, r.Code, r.Text(), deploys.Load())
	}
	// Sent once more, it ran already: a duplicate, answered at once.
	r = c.Invoke(ctx, call)
	if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "DuplicateCallError") || deploys.Load() != 1 {
		t.Fatalf("the call sent again after it ran: %s %s %q (deploys %d), want DuplicateCallError", r.State, r.Code, r.Text(), deploys.Load())
	}
}
