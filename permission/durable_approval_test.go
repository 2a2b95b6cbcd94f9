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

// durableDeploy serves "deploy" behind a guard on a worker with the
// durable path; each run counts in deploys and waits for hold (nil: none).
func durableDeploy(t *testing.T, hold <-chan struct{}, opts ...toolkit.Option) (g *Guard, c *bus.Client, deploys *atomic.Int64) {
	s := natstest.Embedded(t, false)
	g, err := NewGuard(kvStore(t, natstest.JS(t, natstest.Connect(t, s)), nil), &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	tk.Use(Middleware(g))
	deploys = new(atomic.Int64)
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(ctx context.Context, in deployIn) (string, error) {
		deploys.Add(1)
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
			}
		}
		return "deployed to " + in.Env, nil
	}), opts...); err != nil {
		t.Fatal(err)
	}
	wnc := natstest.Connect(t, s)
	wk, err := bus.Serve(wnc, tk, &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: natstest.JS(t, wnc)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wk.Stop(context.Background()) })
	if c, err = bus.NewClient(natstest.Connect(t, s), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return g, c, deploys
}

// askAndApprove sends call (answered approval_required) and approves it.
func askAndApprove(t *testing.T, g *Guard, c *bus.Client, call toolkit.ToolCall) {
	t.Helper()
	wantResp(t, c.Invoke(natstest.Ctx(t), call), toolkit.StateDenied, toolkit.CodeApprovalRequired, call.ID)
	if _, err := g.Approve(natstest.Ctx(t), call.Session, call.ID, "alice"); err != nil {
		t.Fatal(err)
	}
}

// The approval flow says: approve, then send the same call again with the
// same id. A durable call re-sent so within the calls stream's dedup
// window was refused as a duplicate (DuplicateCallError) and never ran.
func TestDurableApprovedResend(t *testing.T) {
	g, c, deploys := durableDeploy(t, nil)
	call := toolkit.ToolCall{ID: "d1", Name: "deploy", Session: "sess", Durable: true, Input: map[string]any{"env": "prod"}}
	askAndApprove(t, g, c, call)
	if r := c.Invoke(natstest.Ctx(t), call); r.State != toolkit.StateSuccess || deploys.Load() != 1 {
		t.Fatalf("approved durable call re-sent: %s %s %q (deploys %d)", r.State, r.Code, r.Text(), deploys.Load())
	}
}

// The same re-send of a call to a durable-by-default tool was queued by
// the worker, dropped by the stream as a duplicate, and never answered:
// the caller waited for its deadline.
func TestDurableByDefaultApprovedResend(t *testing.T) {
	g, c, deploys := durableDeploy(t, nil, toolkit.Durable())
	call := toolkit.ToolCall{ID: "d2", Name: "deploy", Session: "sess", Input: map[string]any{"env": "prod"}}
	askAndApprove(t, g, c, call)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	if r := c.Invoke(ctx, call); r.State != toolkit.StateSuccess || deploys.Load() != 1 {
		t.Fatalf("approved call re-sent: after %v: %s %s %q (deploys %d)", time.Since(start).Round(time.Millisecond), r.State, r.Code, r.Text(), deploys.Load())
	}
	// Sent once more, it ran already: a duplicate, answered at once.
	if r := c.Invoke(ctx, call); r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "DuplicateCallError") || deploys.Load() != 1 {
		t.Fatalf("the call sent again after it ran: %s %s %q (deploys %d), want DuplicateCallError", r.State, r.Code, r.Text(), deploys.Load())
	}
}

// A durable-by-default call sent once more while its approved re-send
// runs was queued under the re-send's id, dropped as its duplicate, and
// left unanswered until the caller read the stale approval_required.
func TestDurableResendWhileApprovedRuns(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	g, c, deploys := durableDeploy(t, release, toolkit.Durable())
	call := toolkit.ToolCall{ID: "d3", Name: "deploy", Session: "sess", Input: map[string]any{"env": "prod"}}
	askAndApprove(t, g, c, call)
	go c.Invoke(natstest.Ctx(t), call) // the approved re-send: runs until release
	for deploys.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	start := time.Now()
	if r := c.Invoke(ctx, call); r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "DuplicateCallError") {
		t.Fatalf("the call sent again while its approved re-send runs: after %v: %s %s %q (deploys %d), want DuplicateCallError at once",
			time.Since(start).Round(time.Millisecond), r.State, r.Code, r.Text(), deploys.Load())
	}
}

// The approval flow says an approval presented with another input is
// refused and stays unused: the approved call, sent then unchanged, runs.
// On the durable path the refused send's final (denied, an approval
// mismatch) is kept under the call id, and the approved call sent after
// it was refused as a duplicate and could never run under its id.
func TestDurableApprovedResendAfterMismatch(t *testing.T) {
	g, c, deploys := durableDeploy(t, nil)
	call := toolkit.ToolCall{ID: "d4", Name: "deploy", Session: "sess", Durable: true, Input: map[string]any{"env": "prod"}}
	askAndApprove(t, g, c, call)
	other := call
	other.Input = map[string]any{"env": "staging"}
	wantResp(t, c.Invoke(natstest.Ctx(t), other), toolkit.StateDenied, toolkit.CodeDenied, "ApprovalMismatchError")
	if r := c.Invoke(natstest.Ctx(t), call); r.State != toolkit.StateSuccess || deploys.Load() != 1 {
		t.Fatalf("the approved call sent after a mismatched one: %s %s %q (deploys %d)", r.State, r.Code, r.Text(), deploys.Load())
	}
}

// A durable call denied (Guard.Deny) and sent again ends denied, and
// that final is kept under its id; another input sent under the id
// afterwards was refused as a duplicate (DuplicateCallError) rather than
// asking, as it does on the core path: the denial is of one input.
func TestDurableDeniedThenOtherInput(t *testing.T) {
	g, c, deploys := durableDeploy(t, nil)
	call := toolkit.ToolCall{ID: "d5", Name: "deploy", Session: "sess", Durable: true, Input: map[string]any{"env": "prod"}}
	wantResp(t, c.Invoke(natstest.Ctx(t), call), toolkit.StateDenied, toolkit.CodeApprovalRequired, call.ID)
	if _, err := g.Deny(natstest.Ctx(t), call.Session, call.ID, "alice", "not on a Friday"); err != nil {
		t.Fatal(err)
	}
	wantResp(t, c.Invoke(natstest.Ctx(t), call), toolkit.StateDenied, toolkit.CodeDenied, "not on a Friday")
	other := call
	other.Input = map[string]any{"env": "staging"}
	wantResp(t, c.Invoke(natstest.Ctx(t), other), toolkit.StateDenied, toolkit.CodeApprovalRequired, call.ID)
	if _, err := g.Approve(natstest.Ctx(t), call.Session, call.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	if r := c.Invoke(natstest.Ctx(t), other); r.State != toolkit.StateSuccess || deploys.Load() != 1 {
		t.Fatalf("the other input, approved: %s %s %q (deploys %d)", r.State, r.Code, r.Text(), deploys.Load())
	}
}
