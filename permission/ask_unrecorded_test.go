package permission

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestAskNotRecordedIsNotOfferedForApproval: a call whose ask the store
// could not record (here a full approvals bucket) is answered
// approval_required without an approval key, saying its ask was not
// recorded and to send it again later or allow it with a rule; its
// suggested rules are kept. It was answered with the approval key as if
// recorded, and approving that key found nothing (ErrNoPending).
func TestAskNotRecordedIsNotOfferedForApproval(t *testing.T) {
	w, _ := boundedApprovals(t, 64<<10)
	ctx := natstest.Ctx(t)
	big := strings.Repeat("x", MaxPendingInput)
	for i := range 64 { // each ask records about 8 KiB: the bucket fills
		id := fmt.Sprint("c", i)
		r := w.call(t, "s", id, "deploy", map[string]any{"env": big})
		if r.Code != toolkit.CodeApprovalRequired {
			t.Fatalf("call %s: %s %q", id, r.Code, r.Text())
		}
		if _, recorded := r.Metadata[MetaApprovalKey]; recorded {
			// Offered for approval: it must be there to approve.
			if ps, err := w.g.Pending(ctx, "s", id); err != nil || len(ps) != 1 {
				t.Fatalf("call %s was answered with approval key %v, but is not pending (%v, %v): approving it finds nothing",
					id, r.Metadata[MetaApprovalKey], ps, err)
			}
			continue
		}
		if !strings.Contains(r.Text(), "could not be recorded") || r.Metadata[MetaInputDigest] != nil ||
			fmt.Sprint(r.Metadata[MetaSuggestedRules]) != "[deploy]" {
			t.Fatalf("an ask not recorded: %q, metadata %v", r.Text(), r.Metadata)
		}
		if _, err := w.g.Approve(ctx, "s", id, "op"); !errors.Is(err, ErrNoPending) {
			t.Fatalf("approving an ask not recorded: %v, want ErrNoPending", err)
		}
		return
	}
	t.Fatal("every ask was recorded: the bucket never filled")
}
