package bus

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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

// TestKVStateBucketMadeAgainLater: a store into a deleted bucket makes it
// again; when that fails (here a stream of another name holds the
// bucket's subjects; on a loaded cluster, a request that timed out) it
// asked whether the bucket exists once only, then retried its write on
// the missing stream until its deadline, though the bucket could have
// been made a moment later. It asks again while it retries.
func TestKVStateBucketMadeAgainLater(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	st := newTestKVState(t, js, nil)
	if _, err := st.Store(ctx, "a", []string{"web"}); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, wire.BucketGroups); err != nil {
		t.Fatal(err)
	}
	natstest.CreateAfterDelete(ctx, t, func() error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "blocker", Subjects: []string{"$KV." + wire.BucketGroups + ".>"}})
		return err
	})
	stored := make(chan error, 1)
	go func() {
		_, err := st.Store(ctx, "b", []string{"files"})
		stored <- err
	}()
	// Its first attempts to make the bucket fail; then the way is free.
	time.Sleep(500 * time.Millisecond)
	if err := js.DeleteStream(ctx, "blocker"); err != nil {
		t.Fatal(err)
	}
	if err := <-stored; err != nil {
		t.Fatalf("store once the bucket could be made again: %v", err)
	}
	if groups, _, ok, err := st.Load(ctx, "b", 0); err != nil || !ok || len(groups) != 1 || groups[0] != "files" {
		t.Fatalf("load after the bucket was made again: %v, %v, %v", groups, ok, err)
	}
}
