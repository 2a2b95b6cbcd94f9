package permission

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/toolkit"
)

// earlierPending is Pending as builds before Pending.Asked have it; they
// decode a stored pending call strictly (decodeStrict), refusing a field
// they do not know.
type earlierPending struct {
	Session   string    `json:"session"`
	CallID    string    `json:"call_id"`
	Tool      string    `json:"tool"`
	Digest    string    `json:"digest"`
	Input     string    `json:"input"`
	Message   string    `json:"message"`
	Reason    string    `json:"reason"`
	Safety    bool      `json:"safety,omitempty"`
	Suggested []Rule    `json:"suggested,omitempty"`
	Created   time.Time `json:"created"`
}

// TestRestoredAskReadByEarlierBuilds: a pending call restored after an
// approval's write failed keeps its ask's revision (Pending.Asked). Stored
// as a JSON field, it made the record one that workers and toolctl of an
// earlier build, in the same fleet, refuse: not listed, and approving it
// failed with ErrUnreadable. The stored value stays what earlier builds
// read; the revision is still read back by this one.
func TestRestoredAskReadByEarlierBuilds(t *testing.T) {
	_, js := connect(t, startNATS(t, t.TempDir()))
	st := kvStore(t, js, nil)
	w := newWorker(t, st, nil)
	wantResp(t, w.call(t, "s", "c1", "deploy", map[string]any{"env": "prod"}), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")
	before, err := st.FindPending(context.Background(), "s", "c1")
	if err != nil || len(before) != 1 {
		t.Fatalf("pending: %v %v", before, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	st.afterClaim = cancel
	if _, err := w.g.Approve(ctx, "s", "c1", "alice"); err == nil {
		t.Fatal("an approval whose approver gave up was stored")
	}
	st.afterClaim = nil
	e, err := kv.Get(context.Background(), js, st.approvals.Bucket(), pendingKey("s", "c1"))
	if err != nil || !e.Found {
		t.Fatalf("the restored ask: %+v %v", e, err)
	}
	var old earlierPending
	if err := decodeStrict(e.Value, &old); err != nil || old.CallID != "c1" {
		t.Errorf("an earlier build reading the restored ask: %+v %v", old, err)
	}
	ps, err := st.FindPending(context.Background(), "s", "c1")
	if err != nil || len(ps) != 1 || ps[0].askedAt() != before[0].Revision || ps[0].Revision <= before[0].Revision {
		t.Fatalf("the restored ask as this build reads it: %+v %v; want asked at %d", ps, err, before[0].Revision)
	}
}
