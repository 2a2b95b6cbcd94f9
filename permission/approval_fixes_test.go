package permission

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestPendingToolSwapKeepsTheSeenTool: a call id pending for one tool is re-sent
// under the same id and input for another tool. The pending record (what
// the approver is shown) silently becomes the other tool, and the
// operator's approval of "call c1" is bound to the tool the operator never
// saw; the agent then runs it.
// A call pending as one tool, re-sent under its id with the same input
// but another tool, replaced the pending record: the approval the operator
// gave for what it saw ran the other tool.
func TestPendingToolSwapKeepsTheSeenTool(t *testing.T) {
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))
	w := newWorker(t, kvStore(t, js, nil), nil)
	var destroyed atomic.Int64
	if err := w.tk.Add(toolkit.Func("destroy", "Destroy an environment.", func(_ context.Context, in deployIn) (string, error) {
		destroyed.Add(1)
		return "destroyed " + in.Env, nil
	})); err != nil {
		t.Fatal(err)
	}
	ctl, err := NewGuard(kvStore(t, natstest.JS(t, natstest.Connect(t, s)), nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := natstest.Ctx(t)
	in := map[string]any{"env": "prod"}

	wantResp(t, w.call(t, "sess", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	seen, err := ctl.Pending(ctx, "", "c1")
	if err != nil || len(seen) != 1 || seen[0].Tool != "deploy" {
		t.Fatalf("pending as the operator sees it: %+v %v", seen, err)
	}
	// The agent sends the same id and input, for another tool.
	wantResp(t, w.call(t, "sess", "c1", "destroy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
	// The operator approves call c1, which it saw as a deploy.
	ap, err := ctl.Approve(ctx, "", "c1", "alice")
	if err != nil {
		t.Fatal(err)
	}
	r := w.call(t, "sess", "c1", "destroy", in)
	if ap.Tool != "deploy" || destroyed.Load() != 0 {
		t.Fatalf("the operator saw c1 pending as %q; the approval is for %q; the re-sent destroy: %s %s %q (destroy ran %d times)",
			seen[0].Tool, ap.Tool, r.State, r.Code, r.Text(), destroyed.Load())
	}
}

// TestHugeShellLineSuggestions: a shell line of many distinct commands
// (well under the 1 MiB max_payload) makes shellSuggest quadratic (a
// slices.Contains per command), and the suggestions make the pending
// record too large for the KV store, so the call can never be approved.
// A shell line of 40,000 distinct commands took seconds (a quadratic
// dedup) and made a pending record too large to store, so the call could
// never be approved.
func TestHugeShellLineSuggestions(t *testing.T) {
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))
	// The check's own bound (DefaultCheckTimeout, 30 s) is not what this
	// test is about: under the race detector on a loaded machine the
	// check of this line has taken longer than that.
	w := newWorker(t, kvStore(t, js, nil), &Options{CheckTimeout: 10 * time.Minute})
	var b strings.Builder
	for i := range 40000 { // about 270 KB
		fmt.Fprintf(&b, "c%d;", i)
	}
	start := time.Now()
	r := w.call(t, "sess", "big", ShellTool, map[string]any{"command": b.String()})
	took := time.Since(start)
	sugg, _ := r.Metadata[MetaSuggestedRules].([]string)
	t.Logf("input %d bytes: %s %s in %v, %d suggested rules", b.Len(), r.State, r.Code, took, len(sugg))
	if len(sugg) > maxSuggested {
		t.Errorf("one call of %d bytes got %d suggested rules (in %v), want at most %d", b.Len(), len(sugg), took, maxSuggested)
	}
	ps, err := w.g.Pending(natstest.Ctx(t), "sess", "big")
	if err != nil || len(ps) != 1 {
		t.Errorf("the approval_required call is not pending (cannot be approved): %v %v", ps, err)
	}
}

// TestDurableApprovedResend: the documented flow (approval_required,
// approve, send the same call again with the same id and input) on the
// durable path: the re-send within the calls stream's dedup window (2
// minutes by default) is dropped as a duplicate, so the approved call
// never runs.

// TestDurableByDefaultApprovedResend: the same flow for a tool that
// is durable by default (the caller sends a plain core call; the worker
// queues it). The worker queues the re-sent call under the same message
// id, JetStream drops it as a duplicate, the worker ignores the
// duplicate ack and tells the caller "queued": the approved call never
// runs and the caller gets no final from the fleet.

// TestApprovalTTLBucketMismatch: a worker configured with
// approval_ttl 72h binds an approvals bucket that another process (a
// toolctl approve / mcp serve, or a worker with the default) created with
// 24h, without a word: its pending calls and approvals vanish from KV
// after 24h although its Guard honours them for 72h.
// A store asked for a 72 h approval TTL over a bucket created with 24 h
// was bound silently: its entries expired at 24 h.
func TestApprovalTTLBucketMismatch(t *testing.T) {
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))
	ctx := natstest.Ctx(t)
	if _, err := NewKVStore(ctx, js, nil); err != nil { // toolctl: NewKVStore(ctx, js, nil)
		t.Fatal(err)
	}
	st, err := NewKVStore(ctx, js, &KVConfig{ApprovalTTL: 72 * time.Hour}) // the worker's mount
	if err != nil {
		return // refusing the mismatch is a fix
	}
	kv, err := js.KeyValue(ctx, "toolbus_approvals")
	if err != nil {
		t.Fatal(err)
	}
	info, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = st
	if info.TTL() < 72*time.Hour {
		t.Fatalf("NewKVStore(ApprovalTTL 72h) succeeded over a bucket whose max age is %v", info.TTL())
	}
}

// TestPendingFloodBounded: every ASK records a pending call (its input cut
// at 8 KiB) in the approvals bucket, which has no byte or count limit: one
// caller sending approval_required calls with fresh ids grows the bucket
// (and the JetStream store shared with every other stream) without bound
// for the whole approval TTL.
// Every ask with a fresh call id wrote a pending record kept for a day,
// in a bucket without bound: one caller could fill the JetStream store.
func TestPendingFloodBounded(t *testing.T) {
	const bound = 1 << 20
	w, js := boundedApprovals(t, bound)
	big := strings.Repeat("x", 16<<10)
	const n = 1000
	for i := range n {
		// Every ask is still answered approval_required, bucket full or not.
		wantResp(t, w.call(t, "hostile", fmt.Sprintf("f%d", i), "deploy", map[string]any{"env": big}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
	}
	ctx := natstest.Ctx(t)
	str, err := js.Stream(ctx, "KV_toolbus_approvals")
	if err != nil {
		t.Fatal(err)
	}
	info, err := str.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after %d calls of one session: %d pending records, %d bytes; bucket max_bytes %d",
		n, info.State.Msgs, info.State.Bytes, info.Config.MaxBytes)
	if info.State.Bytes > bound {
		t.Fatalf("one session holds %d pending records (%d bytes) in a bucket bounded at %d", info.State.Msgs, info.State.Bytes, bound)
	}
	// A new bucket is bounded by default.
	if _, err := NewKVStore(ctx, js, &KVConfig{ApprovalsBucket: "other_approvals", Bucket: "other_policies"}); err != nil {
		t.Fatal(err)
	}
	if st, err := js.Stream(ctx, "KV_other_approvals"); err != nil || st.CachedInfo().Config.MaxBytes != DefaultApprovalsMaxBytes {
		t.Fatalf("default bucket: %v", err)
	}
	// So is the policy bucket, by a count of sessions: callers inventing
	// sessions fill the bound, not the servers' disks.
	if st, err := js.Stream(ctx, "KV_other_policies"); err != nil || st.CachedInfo().Config.MaxMsgs != bus.DefaultMaxStoredSessions {
		t.Fatalf("default policy bucket: %v", err)
	}
}

// TestSuggestedRulesBounded: a command's first word of 300 KB was
// suggested as an allow rule, which made the pending record too large to
// store (over max_payload): the call could never be approved. Rules past
// maxSuggestedBytes are not suggested (a one-shot approval fits).
func TestSuggestedRulesBounded(t *testing.T) {
	for _, in := range []map[string]any{
		cmd(strings.Repeat("x", 300<<10) + " y"),
		{"command": "rm " + strings.Repeat("y", 300<<10)},
	} {
		d := Decide(Policy{}, shell, in)
		n := 0
		for _, r := range d.Suggested {
			n += len(r.Pattern)
		}
		if n > maxSuggestedBytes {
			t.Errorf("%s: %d bytes of suggested rules, want at most %d", d.Behavior, n, maxSuggestedBytes)
		}
	}
	// An ordinary command still gets its rule.
	if d := Decide(Policy{}, shell, cmd("npm test")); len(d.Suggested) != 1 {
		t.Errorf("npm test: suggested %v, want one rule", d.Suggested)
	}
}
