package permission

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestMemoryApprovalsBounded: an approval stays until its call is sent
// again, and nothing else expires it; a caller whose calls are approved
// (by a gateway's elicitation its client answers, say) and never sent
// again grew a MemoryStore without bound. It keeps at most
// MaxMemoryPending approvals, the oldest forgotten first, and the latest
// approved call still runs.
func TestMemoryApprovalsBounded(t *testing.T) {
	st := NewMemoryStore()
	w := newWorker(t, st, nil)
	ctx := context.Background()
	n := MaxMemoryPending + MaxMemoryPending/2
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		if r := w.call(t, "s", id, "deploy", map[string]any{"env": "prod"}); r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("call %d: %s %q", i, r.Code, r.Text())
		}
		if _, err := w.g.Approve(ctx, "s", id, "alice"); err != nil {
			t.Fatalf("approving call %d: %v", i, err)
		}
	}
	st.mu.Lock()
	got := len(st.approvals)
	st.mu.Unlock()
	t.Logf("%d calls approved and not sent again: %d approvals kept", n, got)
	if got > MaxMemoryPending {
		t.Errorf("%d approvals kept after %d calls approved, want at most %d", got, n, MaxMemoryPending)
	}
	if r := w.call(t, "s", fmt.Sprintf("c%d", n-1), "deploy", map[string]any{"env": "prod"}); r.Code != "" {
		t.Errorf("the latest approved call sent again: %s %q, want it run", r.Code, r.Text())
	}
	if r := w.call(t, "s", "c0", "deploy", map[string]any{"env": "prod"}); r.Code != toolkit.CodeApprovalRequired {
		t.Errorf("the oldest approved call sent again: %s %q, want approval_required (its approval forgotten)", r.Code, r.Text())
	}
}
