package permission

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApprovedCallLostThenRetried: the approved call of an idempotent
// tool runs, and its worker dies mid-call. The client sends it again, as
// it does such calls; that attempt finds the approval used (by the
// attempt that may have run) and does not run. The caller is told what
// may have happened, worker_lost, not that the call was not run and
// waits for an approval.
func TestApprovedCallLostThenRetried(t *testing.T) {
	s := natstest.Embedded(t, false)
	g, err := NewGuard(kvStore(t, natstest.JS(t, natstest.Connect(t, s)), nil), &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var deploys atomic.Int32
	started := make(chan struct{}, 4)
	newTK := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		tk.Use(Middleware(g))
		if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(ctx context.Context, in deployIn) (string, error) {
			deploys.Add(1)
			started <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}), toolkit.WithIdempotency(toolkit.Idempotent)); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	serveOn := func(instance string) (*bus.Worker, func()) {
		nc := natstest.Connect(t, s)
		w, err := bus.Serve(nc, newTK(), &bus.WorkerOptions{Instance: instance, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		stop := func() {
			nc.Close() // gone at once, as a killed worker
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			w.Stop(ctx)
		}
		t.Cleanup(stop)
		return w, stop
	}
	_, kill := serveOn("w1")
	c, err := bus.NewClient(natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	call := toolkit.ToolCall{ID: "c1", Name: "deploy", Session: "sess", Input: map[string]any{"env": "prod"}}
	wantResp(t, c.Invoke(natstest.Ctx(t), call), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	if _, err := g.Approve(natstest.Ctx(t), "sess", "c1", "alice"); err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(natstest.Ctx(t), call) }()
	<-started
	serveOn("w2") // where the retry goes
	kill()
	r := <-done
	if r.Code != toolkit.CodeWorkerLost || deploys.Load() != 1 {
		t.Fatalf("the approved call, lost after it ran: %s %s %q, metadata %v (deploys %d)", r.State, r.Code, r.Text(), r.Metadata, deploys.Load())
	}
}

// TestDurableApprovedCallLostThenRedelivered: the approved durable call
// of an idempotent tool runs, and its worker dies mid-call. The queue
// delivers it again; that delivery finds the approval used (by the
// delivery that may have run) and does not run. The caller is told what
// may have happened, worker_lost, not that the call was not run.
func TestDurableApprovedCallLostThenRedelivered(t *testing.T) {
	s := natstest.Embedded(t, false)
	g, err := NewGuard(kvStore(t, natstest.JS(t, natstest.Connect(t, s)), nil), &Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var deploys atomic.Int32
	started := make(chan struct{}, 4)
	serveOn := func(instance string) func() {
		tk := toolkit.New(nil)
		tk.Use(Middleware(g))
		if err := tk.Add(toolkit.Func("deploy", "Deploy.", func(ctx context.Context, in deployIn) (string, error) {
			deploys.Add(1)
			started <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}), toolkit.WithIdempotency(toolkit.Idempotent)); err != nil {
			t.Fatal(err)
		}
		nc := natstest.Connect(t, s)
		js := natstest.JS(t, nc)
		w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: instance, Logger: slog.New(slog.DiscardHandler),
			Durable: &bus.DurableOptions{JetStream: js, AckWait: time.Second}, Results: &bus.ResultsOptions{JetStream: js}})
		if err != nil {
			t.Fatal(err)
		}
		stop := func() {
			nc.Close() // gone at once, as a killed worker
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			w.Stop(ctx)
		}
		t.Cleanup(stop)
		return stop
	}
	kill := serveOn("w1")
	c, err := bus.NewClient(natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })

	call := toolkit.ToolCall{ID: "d1", Name: "deploy", Session: "sess", Durable: true, Input: map[string]any{"env": "prod"}}
	wantResp(t, c.Invoke(natstest.Ctx(t), call), toolkit.StateDenied, toolkit.CodeApprovalRequired, "d1")
	if _, err := g.Approve(natstest.Ctx(t), "sess", "d1", "alice"); err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(natstest.Ctx(t), call) }()
	<-started
	kill()
	serveOn("w2") // where the queue delivers it again
	r := <-done
	if r.Code != toolkit.CodeWorkerLost || deploys.Load() != 1 {
		t.Fatalf("the approved call, lost after it ran: %s %s %q, metadata %v (deploys %d)", r.State, r.Code, r.Text(), r.Metadata, deploys.Load())
	}
	if kept := c.Result(natstest.Ctx(t), "d1"); kept.Code != r.Code {
		t.Fatalf("kept %s %q, the caller got %s", kept.Code, kept.Text(), r.Code)
	}
}
