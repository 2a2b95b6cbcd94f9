package permission

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApproveAfterAnUnusedApprovalExpired: in an approvals bucket made
// with limit markers (nats kv add --marker-ttl; a KVStore binds a bucket
// as it is), an approval that expires leaves the server's marker under
// its key. Approve read any marker newer than the pending call as a use
// of an approval (ErrApprovalUsed: "the call ran"), so the ask of a call
// that never ran could not be approved. Here the call asks while a value
// under the approval's key that is no approval (a field toolbus does not
// write: refused, ErrUnreadable) is still stored, which then expires. (An
// approval too old for the guard would not do: a KVStore's approvals are
// aged on the server's clock, and the bucket's max age removes them.)
func TestApproveAfterAnUnusedApprovalExpired(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js := connect(t, startNATS(t, t.TempDir()))
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: wire.BucketApprovals, TTL: time.Hour, LimitMarkerTTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	st := kvStore(t, js, nil)
	w := newWorker(t, st, nil)
	in := map[string]any{"env": "prod"}
	digest, err := Digest(in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(struct {
		Approval
		Note string `json:"note"`
	}{Approval{Session: "s", CallID: "c1", Tool: "deploy", Digest: digest, By: "alice", Created: time.Now().UTC()}, "not toolbus's"})
	if _, err := st.approvals.Create(ctx, approvalKey("s", "c1"), b, jetstream.KeyTTL(time.Second)); err != nil {
		t.Fatal(err)
	}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	ps, err := st.FindPending(ctx, "s", "c1")
	if err != nil || len(ps) != 1 {
		t.Fatalf("pending: %v %v", ps, err)
	}
	for { // the approval, never used, expires
		e, err := kv.Get(ctx, js, wire.BucketApprovals, approvalKey("s", "c1"))
		if err != nil {
			t.Fatal(err)
		}
		if !e.Found && e.Revision > ps[0].Revision {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the approval did not expire")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if _, err := w.g.Approve(ctx, "s", "c1", "bob"); err != nil {
		t.Fatalf("approving a call that never ran: %v", err)
	}
	wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateSuccess, "", "deployed")
	if n := w.deploys.Load(); n != 1 {
		t.Fatalf("the call ran %d times", n)
	}
}
