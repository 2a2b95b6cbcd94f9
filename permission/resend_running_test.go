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

// A call of a durable-by-default tool, approved and sent again, is queued
// by the worker under <id>~<revision>. Sent once more while that re-send
// still runs, the worker queues it under the same <id>~<revision>: the
// stream drops it as a duplicate (its ack ignored in durablePath.enqueue),
// the worker answers "queued", and the caller waits for frames that go to
// the first re-send's inbox, until its deadline. The plain duplicate is
// answered DuplicateCallError at once; this one is not.
// A durable-by-default call sent once more while its approved re-send
// runs was queued under the re-send's id, dropped as its duplicate, and
// left unanswered until the caller read the stale approval_required.
func TestDurableResendWhileApprovedRuns(t *testing.T) {
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
	release := make(chan struct{})
	if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(ctx context.Context, in deployIn) (string, error) {
		deploys.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return "deployed to " + in.Env, nil
	}), toolkit.Durable()); err != nil {
		t.Fatal(err)
	}
	defer close(release)
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
	call := toolkit.ToolCall{ID: "d3", Name: "deploy", Session: "sess", Input: map[string]any{"env": "prod"}}

	wantResp(t, c.Invoke(natstest.Ctx(t), call), toolkit.StateDenied, toolkit.CodeApprovalRequired, "d3")
	if _, err := g.Approve(natstest.Ctx(t), "sess", "d3", "alice"); err != nil {
		t.Fatal(err)
	}
	go c.Invoke(natstest.Ctx(t), call) // the approved re-send: runs until release
	for deploys.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	start := time.Now()
	r := c.Invoke(ctx, call) // once more, while the re-send runs
	if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "DuplicateCallError") {
		t.Fatalf("the call sent again while its approved re-send runs: after %v: %s %s %q (deploys %d), want DuplicateCallError at once",
			time.Since(start).Round(time.Millisecond), r.State, r.Code, r.Text(), deploys.Load())
	}
}
