package permission

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestMemoryUsedBounded: a MemoryStore remembered the use of every
// approval it was ever asked to consume, for good, so an in-process
// Guard grew by an entry per approved call. A use is remembered only
// while the call's pending call recorded before it is still there.
func TestMemoryUsedBounded(t *testing.T) {
	ctx := context.Background()
	st := NewMemoryStore()
	now := time.Now().UTC()
	for i := range 100 {
		id := fmt.Sprintf("c%d", i)
		_ = st.PutPending(ctx, Pending{Session: "s", CallID: id, Tool: "t", Digest: "d", Created: now})
		ps, _ := st.FindPending(ctx, "s", id)
		a := Approval{Session: "s", CallID: id, Tool: "t", Digest: "d", Created: now}
		if ok, err := st.ApprovePending(ctx, ps[0], a); err != nil || !ok {
			t.Fatalf("approve %s: %v %v", id, ok, err)
		}
		got, _, _ := st.LoadApproval(ctx, "s", id)
		if ok, err := st.ConsumeApproval(ctx, got); err != nil || !ok {
			t.Fatalf("consume %s: %v %v", id, ok, err)
		}
		_ = st.DeletePending(ctx, "s", id) // as the guard does after a use
	}
	if n := len(st.used); n != 0 {
		t.Errorf("%d uses remembered after 100 approved calls ran, none of them pending", n)
	}

	// Still refused: an ask recorded before the use, then approved.
	_ = st.PutPending(ctx, Pending{Session: "s", CallID: "x", Tool: "t", Digest: "d", Created: now})
	ps, _ := st.FindPending(ctx, "s", "x")
	a := Approval{Session: "s", CallID: "x", Tool: "t", Digest: "d", Created: now}
	if ok, err := st.ApprovePending(ctx, ps[0], a); err != nil || !ok {
		t.Fatalf("approve x: %v %v", ok, err)
	}
	_ = st.PutPending(ctx, ps[0]) // asked again before the approval is used
	asked, _ := st.FindPending(ctx, "s", "x")
	got, _, _ := st.LoadApproval(ctx, "s", "x")
	if ok, err := st.ConsumeApproval(ctx, got); err != nil || !ok {
		t.Fatalf("consume x: %v %v", ok, err)
	}
	if ok, err := st.ApprovePending(ctx, asked[0], a); !errors.Is(err, ErrApprovalUsed) || ok {
		t.Fatalf("an ask recorded before the use approved: %v %v", ok, err)
	}
	_ = st.DeletePending(ctx, "s", "x")
	if n := len(st.used); n != 0 {
		t.Errorf("%d uses remembered once the ask before the use is gone", n)
	}
}
