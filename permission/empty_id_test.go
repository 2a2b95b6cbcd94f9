package permission

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestEmptyCallIDNotOfferedForApproval: a call with an empty id can be
// allowed by rules but not approved (Approve refuses an empty id). Its
// approval_required final told the model a user must approve call id ”
// and recorded it as pending, listed for an approval nobody can give.
func TestEmptyCallIDNotOfferedForApproval(t *testing.T) {
	w := newWorker(t, nil, nil)
	r := w.call(t, "s", "", "deploy", map[string]any{"env": "prod"})
	if r.Code != toolkit.CodeApprovalRequired {
		t.Fatalf("got %s %q", r.Code, r.Text())
	}
	if _, ok := r.Metadata[MetaApprovalKey]; ok || strings.Contains(r.Text(), "must approve") {
		t.Errorf("approval key %q offered for a call without an id: %q", r.Metadata[MetaApprovalKey], r.Text())
	}
	if ps, _, err := w.g.ListPending(context.Background(), "", 10); err != nil || len(ps) != 0 {
		t.Errorf("pending: %+v %v, want none", ps, err)
	}
}
