package bus_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRetryToolsOwnRefusalThroughAnotherCall: as
// TestRetryEndsWithToolsOwnRefusal, with a middleware that hands the
// tool a Call of its own, its input filled in: a copy of the one it was
// given, or one it builds anew. The tool ran either way, and its answer
// (approval_required, unavailable) is the call's, marked tool_ran, not
// taken for an attempt that did not run it.
func TestRetryToolsOwnRefusalThroughAnotherCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	c := newClient(t, natstest.Connect(t, s), nil)
	withRegion := func(call *toolkit.Call) map[string]any {
		in := maps.Clone(call.Input)
		if in == nil {
			in = map[string]any{}
		}
		in["region"] = "eu"
		return in
	}
	for _, mw := range []struct {
		name string
		pass func(call *toolkit.Call) *toolkit.Call
	}{
		{"a copy", func(call *toolkit.Call) *toolkit.Call {
			c := *call
			c.Input = withRegion(call)
			return &c
		}},
		{"built anew", func(call *toolkit.Call) *toolkit.Call {
			tc := call.ToolCall
			tc.Input = withRegion(call)
			return &toolkit.Call{ToolCall: tc, Tool: call.Tool}
		}},
	} {
		for _, code := range []toolkit.Code{toolkit.CodeApprovalRequired, toolkit.CodeUnavailable} {
			tool := strings.ReplaceAll(fmt.Sprintf("%s_%s", mw.name, code), " ", "_")
			t.Run(tool, func(t *testing.T) {
				tk := toolkit.New(nil)
				tk.Use(func(next toolkit.Handler) toolkit.Handler {
					return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
						return next(ctx, mw.pass(call), w)
					}
				})
				mustAdd(t, tk, toolkit.Raw(tool, "Look it up upstream.", map[string]any{"type": "object", "properties": map[string]any{}},
					func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
						return toolkit.Errorf(code, "the upstream in %v answered %s", call.Input["region"], code)
					}), toolkit.ReadOnly())
				// The first attempt is taken by a subscriber that never
				// answers and leaves with it; then a worker with tk comes up.
				hole(t, natstest.Connect(t, s), tool, func() { serve(t, natstest.Connect(t, s), tk, nil) })
				r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "c-" + tool, Name: tool})
				if r.Code != code || !strings.Contains(r.Text(), "the upstream in eu") || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
					t.Fatalf("final %s %q (attempts %v, tool_ran %v); want the tool's %s", r.Code, r.Text(), r.Metadata[wire.MetaAttempts], r.Metadata[wire.MetaToolRan], code)
				}
				if r.Metadata[wire.MetaToolRan] != true {
					t.Fatalf("final %s %q without tool_ran: true", r.Code, r.Text())
				}
			})
		}
	}
}
