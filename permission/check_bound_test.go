package permission

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCheckBoundedWithoutLeader: an approved call sent again without a
// deadline while the cluster has no quorum ends unavailable, saying the
// permission state is unreachable, once the check's bound
// (Options.CheckTimeout) is past, and does not run; once the nodes are
// back it runs at most once. The use of the
// approval (a write) was made again for as long as no leader existed:
// the call held its worker slot for as long as the outage lasted.
func TestCheckBoundedWithoutLeader(t *testing.T) {
	st, _, cl := stepdownCluster(t)
	in := map[string]any{"env": "prod"}
	digest, err := Digest(in)
	if err != nil {
		t.Fatal(err)
	}
	untilDone(func(ctx context.Context) error {
		return st.PutApproval(ctx, Approval{Session: "s", CallID: "x", Tool: "deploy", Digest: digest, By: "op", Created: time.Now().UTC()})
	})
	w := newWorker(t, st, &Options{CheckTimeout: 2 * time.Second})

	restore := cl.LoseQuorum()
	answered := make(chan *toolkit.Response, 1)
	go func() { answered <- w.call(t, "s", "x", "deploy", in) }()
	var r *toolkit.Response
	select {
	case r = <-answered:
	case <-time.After(natstest.Guard):
		restore()
		t.Fatalf("the call, without a deadline, was not answered after %v without a leader", natstest.Guard)
	}
	restore()
	if r.Code != toolkit.CodeUnavailable || !strings.Contains(r.Text(), "unreachable") {
		t.Fatalf("without a leader the call ended %s/%s %q, want unavailable saying the permission state is unreachable", r.State, r.Code, r.Text())
	}
	if n := w.deploys.Load(); n != 0 {
		t.Fatalf("the call ran %d times without its approval's use", n)
	}

	// Sent again once a leader is back, the call runs, or, when the
	// approval's use proposed while the cluster had no quorum was stored
	// once it had one again (after the call was answered), asks for
	// approval again: never does it run twice, nor without its approval.
	// Sent through a worker with the default bound.
	w2 := newWorker(t, st, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*natstest.Guard)
	defer cancel()
	for {
		r = w2.tk.Invoke(ctx, toolkit.ToolCall{ID: "x", Name: "deploy", Session: "s", Input: in})
		if r.Code != toolkit.CodeUnavailable || ctx.Err() != nil {
			break
		}
	}
	if r.Code == toolkit.CodeApprovalRequired {
		t.Logf("the approval's use was stored after its call was answered: %s", r.Text())
	} else {
		wantResp(t, r, toolkit.StateSuccess, "", "deployed to prod")
	}
	if n := w.deploys.Load() + w2.deploys.Load(); n > 1 || n == 1 && r.Code != "" {
		t.Fatalf("the call ran %d times (last answer %s), want once when it succeeded, else never", n, r.Code)
	}
}
