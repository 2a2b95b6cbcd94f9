package permission

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// The approvals bucket is bounded, and a KV bucket discards new writes
// when full. The doc says a full bucket only stops recording new pending
// calls; but one caller asking for approvals with fresh ids fills it, and
// then the operator cannot approve a call that was pending before (the
// approval is a write too): every approval of the fleet is blocked until
// entries expire (a day by default).
// A full approvals bucket refused the approvals themselves: a caller
// asking with fresh ids could block every operator's approval for a day.
func TestFullPendingLeavesRoomForApprovals(t *testing.T) {
	w, _ := boundedApprovals(t, 64<<10)
	ctx := natstest.Ctx(t)

	// A legitimate call, pending for the operator.
	wantResp(t, w.call(t, "sess", "legit", "deploy", map[string]any{"env": "prod"}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "legit")
	if p, err := w.g.Pending(ctx, "", "legit"); err != nil || len(p) != 1 {
		t.Fatalf("pending: %v %v", p, err)
	}
	// Another caller floods asks with fresh ids (each answered
	// approval_required, as the doc says).
	for i := range 2000 {
		r := w.call(t, "flood", fmt.Sprintf("f%d", i), "deploy", map[string]any{"env": fmt.Sprintf("e%d", i)})
		if r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("flood call %d: %s %q", i, r.Code, r.Text())
		}
	}
	if _, err := w.g.Approve(ctx, "", "legit", "alice"); err != nil {
		t.Fatalf("approving a call pending before the bucket filled: %v", err)
	}
	r := w.call(t, "sess", "legit", "deploy", map[string]any{"env": "prod"})
	if r.State != toolkit.StateSuccess {
		t.Fatalf("the approved call: %s %s %q", r.State, r.Code, r.Text())
	}
}

// boundedApprovals starts a server and returns a worker guarded by a KV
// store on it whose approvals bucket holds maxBytes, and the server's
// JetStream.
func boundedApprovals(t *testing.T, maxBytes int64) (*worker, jetstream.JetStream) {
	t.Helper()
	js := natstest.JS(t, natstest.Connect(t, natstest.Embedded(t, false)))
	return newWorker(t, kvStore(t, js, &KVConfig{ApprovalsMaxBytes: maxBytes}), nil), js
}
