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
// back the approval is still there and the call runs. The use of the
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

	// The approval was not used: the call, sent again once a leader is
	// back, runs. Sent through a worker with the default bound: one of
	// 2 s may end the approval's use during the election, its delete
	// stored but not yet readable from a leader within kv.WriteTry past
	// the bound, and the approval is then spent without the call
	// running.
	w2 := newWorker(t, st, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*natstest.Guard)
	defer cancel()
	for {
		r = w2.tk.Invoke(ctx, toolkit.ToolCall{ID: "x", Name: "deploy", Session: "s", Input: in})
		if r.Code != toolkit.CodeUnavailable || ctx.Err() != nil {
			break
		}
	}
	wantResp(t, r, toolkit.StateSuccess, "", "deployed to prod")
	if n := w.deploys.Load() + w2.deploys.Load(); n != 1 {
		t.Fatalf("the call ran %d times, want 1", n)
	}
}
