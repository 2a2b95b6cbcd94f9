package permission

import (
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// skewed is a clock off the machine's by d, as another machine's may be.
func skewed(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// clockStore opens a KVStore over its own connection (one per simulated
// machine) to s, on the buckets of cfg.
func clockStore(t *testing.T, s *embedded.Server, cfg KVConfig) *KVStore {
	t.Helper()
	return kvStore(t, natstest.JS(t, natstest.Connect(t, s)), &cfg)
}

// Approvals and pending calls of a KVStore were aged on the clocks of two
// machines: Created, written with the writer's clock, against the
// reader's. An approval given by an operator whose clock is an hour
// behind the worker's was refused as expired (ApprovalTTL 10 min) though
// the server had stored it a moment before; a call asked on a worker an
// hour behind the operator's clock was not listed, and approving it gave
// ErrNoPending; and a worker whose clock is ahead took the call id
// pending a moment ago on another worker, with another input, for
// expired and recorded its own over it. Both ways of setting the TTL:
// the bucket's max age, and a Guard's shorter one.
func TestKVApprovalAcrossClocks(t *testing.T) {
	s := natstest.Embedded(t, false)
	const ttl = 10 * time.Minute
	for _, tc := range []struct {
		name     string
		cfg      KVConfig
		guardTTL time.Duration
	}{
		{"bucket TTL", KVConfig{Bucket: "pol_b", ApprovalsBucket: "appr_b", ApprovalTTL: ttl}, 0},
		{"guard TTL", KVConfig{Bucket: "pol_g", ApprovalsBucket: "appr_g"}, ttl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorker(t, clockStore(t, s, tc.cfg), &Options{ApprovalTTL: tc.guardTTL, Now: time.Now})
			operator := func(skew time.Duration) *Guard {
				g, err := NewGuard(clockStore(t, s, tc.cfg), &Options{ApprovalTTL: tc.guardTTL, Now: skewed(skew), Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			in := map[string]any{"env": "prod"}

			t.Run("approver behind", func(t *testing.T) {
				ctx := natstest.Ctx(t)
				wantResp(t, w.call(t, "s", "behind", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "behind")
				if _, err := operator(-time.Hour).Approve(ctx, "s", "behind", "alice"); err != nil {
					t.Fatalf("approving with a clock behind: %v", err)
				}
				before := w.deploys.Load()
				wantResp(t, w.call(t, "s", "behind", "deploy", in), toolkit.StateSuccess, "", "deployed to prod")
				if n := w.deploys.Load() - before; n != 1 {
					t.Fatalf("%d deploys, want 1", n)
				}
			})
			t.Run("operator ahead", func(t *testing.T) {
				ctx := natstest.Ctx(t)
				ahead := operator(time.Hour)
				wantResp(t, w.call(t, "s", "ahead", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "ahead")
				ps, _, err := ahead.ListPending(ctx, "s", 10)
				if err != nil || !slices.ContainsFunc(ps, func(p Pending) bool { return p.CallID == "ahead" }) {
					t.Fatalf("listed with a clock ahead: %+v %v", ps, err)
				}
				if _, err := ahead.Approve(ctx, "s", "ahead", "bob"); err != nil {
					t.Fatalf("approving with a clock ahead: %v", err)
				}
				wantResp(t, w.call(t, "s", "ahead", "deploy", in), toolkit.StateSuccess, "", "deployed to prod")
			})
			t.Run("workers apart", func(t *testing.T) {
				// The call id pending on the one keeps its input on the
				// other.
				ctx := natstest.Ctx(t)
				w2 := newWorker(t, clockStore(t, s, tc.cfg), &Options{ApprovalTTL: tc.guardTTL, Now: skewed(time.Hour)})
				wantResp(t, w.call(t, "s", "kept", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "A user must approve it")
				wantResp(t, w2.call(t, "s", "kept", "deploy", map[string]any{"env": "dev"}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "already waiting for approval with another tool or input")
				if ps, err := w.g.Pending(ctx, "s", "kept"); err != nil || len(ps) != 1 || ps[0].Input != `{"env":"prod"}` {
					t.Fatalf("pending: %+v %v", ps, err)
				}
			})
		})
	}
}

// Past a Guard's ApprovalTTL on the server's clock, an approval and a
// pending call of a KVStore are expired, whatever the clocks of the
// machines that wrote and read them say (here the reader's is an hour
// behind the writer's, so by Created they were an hour from expiring).
func TestKVApprovalExpiresOnServerClock(t *testing.T) {
	s := natstest.Embedded(t, false)
	ctx := natstest.Ctx(t)
	const ttl = 100 * time.Millisecond
	cfg := KVConfig{Bucket: "pol_e", ApprovalsBucket: "appr_e"}
	w := newWorker(t, clockStore(t, s, cfg), &Options{ApprovalTTL: ttl, Now: skewed(-time.Hour)})
	st := clockStore(t, s, cfg)
	in := map[string]any{"env": "prod"}
	digest, err := Digest(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutApproval(ctx, Approval{Session: "s", CallID: "old", Tool: "deploy", Digest: digest, By: "alice", Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPending(ctx, Pending{Session: "s", CallID: "asked", Tool: "deploy", Digest: digest, Input: `{"env":"prod"}`, Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	// Not a bound on anything: the server's clock is surely past the TTL
	// of both once this much time has gone by.
	time.Sleep(3 * ttl)
	wantResp(t, w.call(t, "s", "old", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "A user must approve it")
	if n := w.deploys.Load(); n != 0 {
		t.Fatalf("an expired approval was used (%d deploys)", n)
	}
	if ps, _, err := w.g.ListPending(ctx, "s", 10); err != nil || slices.ContainsFunc(ps, func(p Pending) bool { return p.CallID == "asked" }) {
		t.Fatalf("an expired pending call listed: %+v %v", ps, err)
	}
	if _, err := w.g.Approve(ctx, "s", "asked", "bob"); !errors.Is(err, ErrNoPending) {
		t.Fatalf("approving an expired pending call: %v", err)
	}
}
