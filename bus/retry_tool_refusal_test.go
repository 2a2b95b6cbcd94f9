package bus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestRetryEndsWithToolsOwnRefusal: a read-only call's first attempt is
// lost, and the client sends it again. An attempt the permission checks
// answer approval_required did not run its tool, and says nothing of the
// lost attempt: the call ends worker_lost. A tool that answers
// approval_required or not_found itself ran: its answer is the call's.
func TestRetryEndsWithToolsOwnRefusal(t *testing.T) {
	s := natstest.Embedded(t, false)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat})
	for _, tt := range []struct {
		tool  string
		guard bool // a middleware answers, before the tool
		err   *toolkit.Error
		want  toolkit.Code
	}{
		{"ask_upstream", false, toolkit.Errorf(toolkit.CodeApprovalRequired, "the upstream wants an approval"), toolkit.CodeApprovalRequired},
		{"find_record", false, toolkit.Errorf(toolkit.CodeNotFound, "no such record"), toolkit.CodeNotFound},
		{"ask_guard", true, toolkit.Errorf(toolkit.CodeApprovalRequired, "ApprovalRequiredError: approve first"), toolkit.CodeWorkerLost},
	} {
		t.Run(tt.tool, func(t *testing.T) {
			tk := toolkit.New(nil)
			if tt.guard {
				tk.Use(func(next toolkit.Handler) toolkit.Handler {
					return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return tt.err }
				})
			}
			mustAdd(t, tk, toolkit.Raw(tt.tool, "Look it up.", map[string]any{"type": "object", "properties": map[string]any{}},
				func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return tt.err }), toolkit.ReadOnly())
			// The first attempt is taken by a subscriber that never
			// answers and leaves with it; then a worker with tk comes up.
			hole(t, natstest.Connect(t, s), tt.tool, func() { serve(t, natstest.Connect(t, s), tk, nil) })
			r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "c-" + tt.tool, Name: tt.tool})
			if r.Code != tt.want || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
				t.Fatalf("final %s %q (attempts %v); want %s", r.Code, r.Text(), r.Metadata[wire.MetaAttempts], tt.want)
			}
			if !tt.guard && !strings.Contains(r.Text(), tt.err.Message) {
				t.Fatalf("the tool's answer was replaced: %q", r.Text())
			}
		})
	}
}
