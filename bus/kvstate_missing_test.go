package bus

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestKVStateBucketDeleted: a group-state bucket deleted under running
// workers (nats kv rm, to make it with another configuration) means no
// session has state, and the next reset_tools makes it again. Until the
// workers restarted, every read and write waited out its deadline on the
// missing stream (no responders, as during an election) and failed.
func TestKVStateBucketDeleted(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	st := newTestKVState(t, js, nil)
	rev, err := st.Store(ctx, "a", []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, wire.BucketGroups); err != nil {
		t.Fatal(err)
	}
	// Answers that wait out this deadline fail the test.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if groups, _, ok, err := st.Load(wctx, "a", rev); err != nil || ok {
		t.Fatalf("load from a deleted bucket: %v, %v, %v", groups, ok, err)
	}
	if wctx.Err() != nil {
		t.Fatal("load waited out its deadline")
	}
	rev, err = st.Store(wctx, "b", []string{"files"})
	if err != nil {
		t.Fatalf("store into a deleted bucket: %v", err)
	}
	if groups, _, ok, err := st.Load(wctx, "b", rev); err != nil || !ok || len(groups) != 1 || groups[0] != "files" {
		t.Fatalf("load after the bucket was made again: %v, %v, %v", groups, ok, err)
	}
	if _, err := js.KeyValue(ctx, wire.BucketGroups); err != nil {
		t.Fatalf("the bucket: %v", err)
	}
}
