package permission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// TestApproveAfterAskedAgainRunsOnce: Alice approves c1; the agent had
// sent it again meanwhile (asked again: pending once more, as it is
// between her claim and her write); Bob approves that ask, and the
// approved call runs between his claim and his write. The call runs
// once: Bob's approval, of an ask made before Alice's approval was used,
// is refused. Approve used to claim the pending call and then store the
// approval whatever happened in between, so Bob's approval was stored
// after Alice's was used and the call ran a second time.
func TestApproveAfterAskedAgainRunsOnce(t *testing.T) {
	ctx := context.Background()
	_, js := connect(t, startNATS(t, t.TempDir()))
	st := kvStore(t, js, nil)
	w := newWorker(t, st, nil)
	in := map[string]any{"env": "prod"}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	ps, err := st.FindPending(ctx, "s", "c1")
	if err != nil || len(ps) != 1 {
		t.Fatalf("pending: %v %v", ps, err)
	}
	if _, err := w.g.Approve(ctx, "s", "c1", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPending(ctx, ps[0]); err != nil { // asked again before her write
		t.Fatal(err)
	}
	reached, release := make(chan struct{}), make(chan struct{})
	st.afterClaim = func() { close(reached); <-release }
	bob := make(chan error, 1)
	go func() { _, err := w.g.Approve(ctx, "s", "c1", "bob"); bob <- err }()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("Bob's approval did not claim the call asked again")
	}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateSuccess, "", "deployed")
	close(release)
	if err := <-bob; !errors.Is(err, ErrNoPending) || !errors.Is(err, ErrApprovalUsed) {
		t.Fatalf("Bob's approval after the call ran: %v", err)
	}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	if n := w.deploys.Load(); n != 1 {
		t.Fatalf("the approved call ran %d times", n)
	}
}

// TestApproveCancelledKeepsTheAsk: an approver who gives up between the
// claim of the pending call and the approval's write (Ctrl-C on toolctl
// approve, a gateway request ending) leaves the call pending, not lost:
// the restore ran on the ended context and failed.
func TestApproveCancelledKeepsTheAsk(t *testing.T) {
	_, js := connect(t, startNATS(t, t.TempDir()))
	st := kvStore(t, js, nil)
	w := newWorker(t, st, nil)
	in := map[string]any{"env": "prod"}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	ctx, cancel := context.WithCancel(context.Background())
	st.afterClaim = cancel
	if _, err := w.g.Approve(ctx, "s", "c1", "alice"); err == nil {
		t.Fatal("an approval whose approver gave up was stored")
	}
	st.afterClaim = nil
	if ps, err := st.FindPending(context.Background(), "s", "c1"); err != nil || len(ps) != 1 {
		t.Fatalf("the ask after an approval given up: %v %v", ps, err)
	}
}

// TestApproveWriteFailedAfterUseRunsOnce: as TestApproveAfterAskedAgainRunsOnce,
// but Bob's write fails on its own (his request ends: not a lost
// compare-and-set) after the call ran on Alice's approval. The ask he
// claimed is restored; it was answered by that run all the same, so
// Carol's approval of it is refused and the call does not run again. The
// restored ask used to be recorded as a new one, newer than the use, and
// Carol's approval made the call run a second time.
func TestApproveWriteFailedAfterUseRunsOnce(t *testing.T) {
	ctx := context.Background()
	_, js := connect(t, startNATS(t, t.TempDir()))
	st := kvStore(t, js, nil)
	w := newWorker(t, st, nil)
	in := map[string]any{"env": "prod"}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	ps, err := st.FindPending(ctx, "s", "c1")
	if err != nil || len(ps) != 1 {
		t.Fatalf("pending: %v %v", ps, err)
	}
	if _, err := w.g.Approve(ctx, "s", "c1", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPending(ctx, ps[0]); err != nil { // asked again before her approval was used
		t.Fatal(err)
	}
	bobCtx, bobGone := context.WithCancel(ctx)
	reached, release := make(chan struct{}), make(chan struct{})
	st.afterClaim = func() { close(reached); <-release }
	bob := make(chan error, 1)
	go func() { _, err := w.g.Approve(bobCtx, "s", "c1", "bob"); bob <- err }()
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("Bob's approval did not claim the call asked again")
	}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateSuccess, "", "deployed")
	bobGone() // his write fails with his request, not for the use
	close(release)
	if err := <-bob; err == nil || errors.Is(err, ErrApprovalUsed) {
		t.Fatalf("Bob's approval, its write failed: %v, want a failed write", err)
	}
	st.afterClaim = nil
	if _, err := w.g.Approve(ctx, "s", "c1", "carol"); !errors.Is(err, ErrNoPending) || !errors.Is(err, ErrApprovalUsed) {
		t.Errorf("Carol's approval of the restored ask, answered by the run: %v, want ErrApprovalUsed", err)
	}
	w.call(t, "s", "c1", "deploy", in)
	if n := w.deploys.Load(); n != 1 {
		t.Fatalf("the approved call ran %d times", n)
	}
}
