package permission

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDenyRefusesTheAsk: an operator could approve a call that asked,
// never refuse it: it stayed pending until it expired, and the same call
// sent again asked again. Denied, it is no longer pending, and the same
// call (same session, id, tool and input) ends denied with the
// operator's reason; another input under the id, or another id, asks as
// before, in a MemoryStore and in a KVStore alike.
func TestDenyRefusesTheAsk(t *testing.T) {
	s := natstest.Embedded(t, false)
	stores := map[string]Store{"memory": NewMemoryStore(), "kv": kvStore(t, natstest.JS(t, natstest.Connect(t, s)), nil)}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := natstest.Ctx(t)
			w := newWorker(t, st, nil)
			prod := map[string]any{"env": "prod"}
			wantResp(t, w.call(t, "s1", "c1", "deploy", prod), toolkit.StateDenied, toolkit.CodeApprovalRequired, "PermissionRequiredError")
			d, err := w.g.Deny(ctx, "", "c1", "alice", "not on a Friday")
			if err != nil {
				t.Fatal(err)
			}
			if !d.Denied || d.Session != "s1" || d.Tool != "deploy" || d.By != "alice" || d.Reason != "not on a Friday" {
				t.Fatalf("denial %+v", d)
			}
			if ps, _, err := w.g.ListPending(ctx, "", 10); err != nil || len(ps) != 0 {
				t.Fatalf("pending after the denial: %+v, %v; want none", ps, err)
			}
			for range 2 { // not consumed: denied each time
				r := w.call(t, "s1", "c1", "deploy", prod)
				wantResp(t, r, toolkit.StateDenied, toolkit.CodeDenied, "not on a Friday")
				if r.Metadata[MetaPermissionReason] != wire.PermissionUserDenied {
					t.Fatalf("metadata %v", r.Metadata)
				}
			}
			if ps, _, err := w.g.ListPending(ctx, "", 10); err != nil || len(ps) != 0 {
				t.Fatalf("pending after the denied call was sent again: %+v, %v; want none", ps, err)
			}
			if _, err := w.g.Deny(ctx, "s1", "c1", "alice", ""); !errors.Is(err, ErrNoPending) {
				t.Fatalf("denying it again: %v, want ErrNoPending", err)
			}
			// Another input under the id, another id: they ask, and
			// the other input, approved, runs.
			staging := map[string]any{"env": "staging"}
			wantResp(t, w.call(t, "s1", "c1", "deploy", staging), toolkit.StateDenied, toolkit.CodeApprovalRequired, "PermissionRequiredError")
			wantResp(t, w.call(t, "s1", "c2", "deploy", prod), toolkit.StateDenied, toolkit.CodeApprovalRequired, "PermissionRequiredError")
			if _, err := w.g.Approve(ctx, "s1", "c1", "bob"); err != nil {
				t.Fatal(err)
			}
			wantResp(t, w.call(t, "s1", "c1", "deploy", staging), toolkit.StateSuccess, "", "deployed to staging")
			if n := w.deploys.Load(); n != 1 {
				t.Fatalf("%d deploys, want the approved one alone", n)
			}
		})
	}
}

// TestDenyWithoutReason: a reason past MaxDenyReason is refused and
// loses nothing (the call stays pending); a denial without a reason
// still ends the call denied.
func TestDenyWithoutReason(t *testing.T) {
	ctx := context.Background()
	w := newWorker(t, nil, nil)
	w.call(t, "", "c1", "deploy", map[string]any{"env": "prod"})
	if _, err := w.g.Deny(ctx, "", "c1", "alice", strings.Repeat("x", MaxDenyReason+1)); err == nil || !strings.Contains(err.Error(), "reason") {
		t.Fatalf("a reason past MaxDenyReason: %v, want an error", err)
	}
	if ps, _ := w.g.Pending(ctx, "", "c1"); len(ps) != 1 {
		t.Fatalf("the refused denial lost the pending call: %+v", ps)
	}
	if _, err := w.g.Deny(ctx, "", "c1", "alice", ""); err != nil {
		t.Fatal(err)
	}
	wantResp(t, w.call(t, "", "c1", "deploy", map[string]any{"env": "prod"}), toolkit.StateDenied, toolkit.CodeDenied, "PermissionDeniedError: a user denied")
}

// legacyApproval is the approval record as builds before Guard.Deny
// decode it (strictly: decodeStrict).
type legacyApproval struct {
	Session string    `json:"session"`
	CallID  string    `json:"call_id"`
	Tool    string    `json:"tool"`
	Digest  string    `json:"digest"`
	By      string    `json:"by,omitempty"`
	Created time.Time `json:"created"`
}

// TestDenialIsNoApprovalToEarlierBuilds: a denial is stored under the
// approval's key; an earlier worker reading it must not take it for an
// approval. It decodes approvals strictly, so the denial's fields make
// it refuse the record (ErrUnreadable: no approval, the call asks
// again), while an approval still decodes as before.
func TestDenialIsNoApprovalToEarlierBuilds(t *testing.T) {
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))
	st := kvStore(t, js, nil)
	ctx := natstest.Ctx(t)
	w := newWorker(t, st, nil)
	for _, id := range []string{"denied", "approved"} {
		wantResp(t, w.call(t, "s1", id, "deploy", map[string]any{"env": "prod"}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "PermissionRequiredError")
	}
	if _, err := w.g.Deny(ctx, "s1", "denied", "alice", "no"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.g.Approve(ctx, "s1", "approved", "alice"); err != nil {
		t.Fatal(err)
	}
	b, err := js.KeyValue(ctx, wire.BucketApprovals)
	if err != nil {
		t.Fatal(err)
	}
	read := func(id string) error {
		e, err := b.Get(ctx, approvalKey("s1", id))
		if err != nil {
			t.Fatal(err)
		}
		var a legacyApproval
		return decodeStrict(e.Value(), &a)
	}
	if err := read("denied"); err == nil {
		t.Fatal("an earlier build decodes the denial as an approval")
	}
	if err := read("approved"); err != nil {
		t.Fatalf("an earlier build no longer reads an approval: %v", err)
	}
}

// TestDeniedErrorText: the operator's reason sits between two sentences
// of the denial the model reads; one without its own full stop ran into
// the next ("…: no secrets in .env The call was not run").
func TestDeniedErrorText(t *testing.T) {
	for _, c := range []struct{ reason, want string }{
		{"", "PermissionDeniedError: a user denied this call of 'deploy' (call id 'c1'). The call was not run, and sent again it is denied again."},
		{"no secrets in .env", "PermissionDeniedError: a user denied this call of 'deploy' (call id 'c1'): no secrets in .env. The call was not run, and sent again it is denied again."},
		{"not on a Friday!", "PermissionDeniedError: a user denied this call of 'deploy' (call id 'c1'): not on a Friday! The call was not run, and sent again it is denied again."},
		{"ask Bob first.\n", "PermissionDeniedError: a user denied this call of 'deploy' (call id 'c1'): ask Bob first. The call was not run, and sent again it is denied again."},
	} {
		var e *toolkit.Error
		if !errors.As(deniedError(Approval{Tool: "deploy", CallID: "c1", Reason: c.reason}), &e) || e.Message != c.want {
			t.Errorf("reason %q: %v\nwant %s", c.reason, e, c.want)
		}
	}
}
