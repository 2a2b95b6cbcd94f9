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

// TestDurableToolsOwnRefusalRan: a kept final that is approval_required,
// or denied as an approval mismatch or by a user, ended its call without
// running it when the permission check answered it: the same id sent
// again (after its approval) runs. A tool can end its call with that code
// and metadata itself (a tool's error metadata and its chunks' reach the
// final); it ran, with whatever effects, and its id sent again is a
// duplicate, not a call to run again.
func TestDurableToolsOwnRefusalRan(t *testing.T) {
	for _, tt := range []struct {
		name string
		run  func(w toolkit.Writer) error
	}{
		{"approval_required", func(toolkit.Writer) error {
			return toolkit.NewError(toolkit.CodeApprovalRequired, "the upstream wants an approval")
		}},
		{"user denied", func(toolkit.Writer) error {
			e := toolkit.NewError(toolkit.CodeDenied, "the upstream refused")
			e.Metadata = map[string]any{wire.MetaPermissionReason: wire.PermissionUserDenied}
			return e
		}},
		{"mismatch in a chunk", func(w toolkit.Writer) error {
			if err := w.Write(toolkit.Chunk{Metadata: map[string]any{wire.MetaPermissionReason: wire.PermissionApprovalMismatch}}); err != nil {
				return err
			}
			return toolkit.NewError(toolkit.CodeDenied, "the upstream refused")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			var runs atomic.Int32
			tk := toolkit.New(nil)
			mustAdd(t, tk, toolkit.Raw("transfer", "Move money, then ask upstream.", map[string]any{"type": "object", "properties": map[string]any{}},
				func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					runs.Add(1) // the money moved
					return tt.run(w)
				}))
			keepingWorker(t, s, tk, bus.WorkerOptions{Instance: "w1"}, 0)
			c := newClient(t, natstest.Connect(t, s), nil)
			call := toolkit.ToolCall{ID: "t1", Name: "transfer", Durable: true}
			first := c.Invoke(ctxT(t), call)
			if first.State != toolkit.StateDenied || runs.Load() != 1 {
				t.Fatalf("first send: %s %s %q (runs %d)", first.State, first.Code, first.Text(), runs.Load())
			}
			if r := c.Result(ctxT(t), "t1"); r.Code != first.Code {
				t.Fatalf("kept: %s %q", r.Code, r.Text())
			}
			r := c.Invoke(ctxT(t), call)
			if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "DuplicateCallError") || runs.Load() != 1 {
				t.Fatalf("sent again: %s %q (runs %d); want a duplicate, not run", r.Code, r.Text(), runs.Load())
			}
		})
	}
}
