package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestToolCannotClaimBusCodes: worker_lost is the bus's word that a
// worker went silent with the call: the client sends a read-only or
// idempotent call again. A tool (or its middleware) that ended its call
// worker_lost had it run again, up to MaxAttempts, though no worker was
// lost. A worker_lost a tool or its middleware writes now goes out
// tool_error, its message and metadata kept, and runs once. overloaded
// keeps its rule: a tool with effects that answers it is not sent again;
// a read-only tool's own (an upstream's 429) is, as the Retry middleware
// does in process; a middleware's (a rate limit, before the tool) has the
// call sent again and run.
func TestToolCannotClaimBusCodes(t *testing.T) {
	errLost := func() error {
		return &toolkit.Error{Code: toolkit.CodeWorkerLost, Message: "WorkerLostError: the upstream's worker went away", Metadata: map[string]any{"mine": "kept"}}
	}
	cases := []struct {
		name     string
		readOnly bool
		mw       func(mwRuns *atomic.Int32) toolkit.Middleware
		tool     func(ctx context.Context) error
		code     toolkit.Code
		text     string
		runs     int32 // the tool's
		mwRuns   int32 // the middleware's
		attempts any   // the final's wire.MetaAttempts: nil when sent once
	}{
		{name: "tool worker_lost", readOnly: true, tool: func(context.Context) error { return errLost() },
			code: toolkit.CodeToolError, text: "the upstream's worker went away", runs: 1},
		{name: "middleware worker_lost", readOnly: true,
			mw: func(n *atomic.Int32) toolkit.Middleware {
				return func(next toolkit.Handler) toolkit.Handler {
					return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
						n.Add(1)
						return errLost()
					}
				}
			},
			code: toolkit.CodeToolError, text: "the upstream's worker went away", mwRuns: 1},
		{name: "tool overloaded", tool: func(context.Context) error {
			return toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: the upstream answered 429")
		}, code: toolkit.CodeOverloaded, text: "answered 429", runs: 1},
		{name: "read-only tool overloaded", readOnly: true, tool: func(context.Context) error {
			return toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: the upstream answered 429")
		}, code: toolkit.CodeOverloaded, text: "answered 429", runs: 3, attempts: 3},
		{name: "middleware overloaded", readOnly: true,
			mw: func(n *atomic.Int32) toolkit.Middleware {
				return func(next toolkit.Handler) toolkit.Handler {
					return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
						if n.Add(1) == 1 {
							return toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: rate limited")
						}
						return next(ctx, call, w)
					}
				}
			},
			tool: func(context.Context) error { return nil }, code: "", text: "done", runs: 1, mwRuns: 2, attempts: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			var runs, mwRuns atomic.Int32
			tk := toolkit.New(nil)
			if tc.mw != nil {
				tk.Use(tc.mw(&mwRuns))
			}
			var opts []toolkit.Option
			if tc.readOnly {
				opts = append(opts, toolkit.ReadOnly())
			}
			mustAdd(t, tk, toolkit.Raw("scan", "Scans.", map[string]any{"type": "object", "properties": map[string]any{}},
				func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					runs.Add(1)
					if err := tc.tool(ctx); err != nil {
						return err
					}
					return w.Write(toolkit.Text("done"))
				}), opts...)
			serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "a"})
			c := newClient(t, natstest.Connect(t, s), nil)
			ctx := ctxT(t)
			// The client sends only calls of tools the fleet announces
			// read-only or idempotent again: it knows this one's flags.
			f, err := c.Fleet(ctx)
			if err != nil {
				t.Fatal(err)
			}
			natstest.WaitFor(t, "the client to hear of worker a", func() bool { return len(f.Instances()) == 1 })

			r := c.Invoke(ctx, toolkit.ToolCall{ID: "scan-1", Name: "scan"})
			if runs.Load() != tc.runs || mwRuns.Load() != tc.mwRuns {
				t.Errorf("the tool ran %d times and its middleware %d, want %d and %d", runs.Load(), mwRuns.Load(), tc.runs, tc.mwRuns)
			}
			if r.Code != tc.code || !strings.Contains(r.Text(), tc.text) || r.Metadata[wire.MetaAttempts] != tc.attempts {
				t.Errorf("final %s %q %v, want %q with %q, attempts %v", r.Code, r.Text(), r.Metadata, tc.code, tc.text, tc.attempts)
			}
			if tc.code == toolkit.CodeToolError && r.Metadata["mine"] != "kept" {
				t.Errorf("the tool's metadata was lost: %v", r.Metadata)
			}
		})
	}
}

// TestEarlierWorkerToolWorkerLostNotRetried: a worker of an earlier
// build passes a tool's own worker_lost on as it is, with tool_ran: true
// (a worker never marks its own worker_lost so). The client takes it for
// the tool's answer: a read-only call is not sent again.
func TestEarlierWorkerToolWorkerLostNotRetried(t *testing.T) {
	s := natstest.Embedded(t, false)
	calls := answeringReadOnly(t, s, "peek", func(id string) *toolkit.Response {
		r := toolkit.Final(id, toolkit.CodeWorkerLost, "WorkerLostError: the upstream's worker went away")
		r.Metadata = map[string]any{wire.MetaToolRan: true, wire.MetaWorker: "old"}
		return r
	})
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.Fleet(ctxT(t)); err != nil { // the fleet view knows peek is read-only
		t.Fatal(err)
	}
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "peek"})
	if r.Code != toolkit.CodeWorkerLost || calls.Load() != 1 || r.Metadata[wire.MetaAttempts] != nil {
		t.Fatalf("final %s %q %v after %d sends; want the tool's worker_lost after one", r.Code, r.Text(), r.Metadata, calls.Load())
	}
}
