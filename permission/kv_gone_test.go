package permission

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestKVReadOfDeletedBucketFails: a session's policy read after the
// policies bucket was deleted (nats kv rm, a JetStream reset) fails at
// once, as it did before reads waited out elections: its direct get finds
// no responders, as during an election, and was retried for as long as
// the call's context lasted, for good when it had no deadline.
func TestKVReadOfDeletedBucketFails(t *testing.T) {
	nc := natstest.Conn(t, natstest.Server(t))
	js := natstest.JS(t, nc)
	st, err := NewKVStore(natstest.Ctx(t), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(natstest.Ctx(t), wire.BucketPermissions); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := st.LoadSession(context.Background(), "s")
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a policy read from a deleted bucket succeeded")
		}
		t.Logf("as expected: %v", err)
	case <-time.After(natstest.Guard):
		t.Fatalf("a policy read from a deleted bucket, without a deadline, still waits after %v", natstest.Guard)
	}
}
