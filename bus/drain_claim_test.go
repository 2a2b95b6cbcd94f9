package bus_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestToolCannotClaimWorkerMarkers: the metadata keys wire.MetaDrained
// and wire.MetaToolRan are the worker's word on how a call ended (its stop
// cut the call; its tool was entered). A read-only tool that wrote
// drained: true into the metadata of its own interrupted answer, as an
// error or as a chunk, was read by the client as its worker's stop, and
// run again, up to MaxAttempts, though it had run and no worker stopped;
// and a middleware that answered unavailable with tool_ran: true, its tool
// never entered, passed that on as the worker's word. The worker now drops
// those keys from what the tool and its middleware wrote: only it sets
// them, so the call runs once and its final carries neither.
func TestToolCannotClaimWorkerMarkers(t *testing.T) {
	claim := map[string]any{wire.MetaDrained: true, wire.MetaToolRan: true, "mine": "kept"}
	heard := make(chan struct{}, 1) // the caller has a chunk streamed
	cases := []struct {
		name string
		code toolkit.Code
		mw   toolkit.Middleware
		tool func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error
	}{
		{name: "error metadata", code: toolkit.CodeInterrupted, tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return &toolkit.Error{Code: toolkit.CodeInterrupted, Message: "stopped by the tool", Metadata: claim}
		}},
		{name: "chunk metadata", code: toolkit.CodeInterrupted, tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "stopped by the tool"}},
				State: toolkit.StateInterrupted, Metadata: claim})
		}},
		{name: "streamed chunk metadata", code: toolkit.CodeInterrupted, tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			if err := w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "partial"}}, Metadata: claim}); err != nil {
				return err
			}
			select {
			case <-heard:
			case <-ctx.Done():
				return ctx.Err()
			}
			return toolkit.NewError(toolkit.CodeInterrupted, "stopped by the tool")
		}},
		{name: "success", tool: func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "done"}}, Metadata: claim})
		}},
		{name: "middleware answers", code: toolkit.CodeUnavailable, mw: func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				return &toolkit.Error{Code: toolkit.CodeUnavailable, Message: "not now", Metadata: claim}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			var runs atomic.Int32
			tk := toolkit.New(nil)
			if tc.mw != nil {
				tk.Use(tc.mw)
			}
			tool := tc.tool
			if tool == nil {
				tool = func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil }
			}
			mustAdd(t, tk, toolkit.Raw("scan", "Scans.", map[string]any{"type": "object", "properties": map[string]any{}},
				func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					runs.Add(1)
					return tool(ctx, call, w)
				}), toolkit.ReadOnly())
			serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "a"})
			c := newClient(t, natstest.Connect(t, s), nil)
			ctx := ctxT(t)
			// The client sends only calls of tools the fleet announces
			// read-only or idempotent again: it knows this one is.
			f, err := c.Fleet(ctx)
			if err != nil {
				t.Fatal(err)
			}
			natstest.WaitFor(t, "the client to hear of worker a", func() bool { return len(f.Instances()) == 1 })

			var r *toolkit.Response
			for ev := range c.Call(ctx, toolkit.ToolCall{ID: "scan-1", Name: "scan"}) {
				if ev.Chunk != nil {
					select {
					case heard <- struct{}{}:
					default:
					}
				}
				if ev.Final != nil {
					r = ev.Final
				}
			}
			select {
			case <-heard:
			default:
			}
			if r == nil {
				t.Fatal("no final")
			}
			want := int32(1)
			if tc.mw != nil {
				want = 0
			}
			if got := runs.Load(); got != want {
				t.Errorf("the tool ran %d times, want %d", got, want)
			}
			if r.Code != tc.code || r.Metadata[wire.MetaAttempts] != nil || r.Metadata["mine"] != "kept" {
				t.Errorf("the call ended %s %q %v, want %q, sent once, the tool's own metadata kept", r.Code, r.Text(), r.Metadata, tc.code)
			}
			for _, k := range []string{wire.MetaDrained, wire.MetaToolRan} {
				if _, ok := r.Metadata[k]; ok && !(k == wire.MetaToolRan && tc.code != "" && want == 1) {
					t.Errorf("the final carries %s=%v, which only the worker may set (%v)", k, r.Metadata[k], r.Metadata)
				}
			}
		})
	}
}
