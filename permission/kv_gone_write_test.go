package permission

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestKVWriteToDeletedBucketFails: an approval stored, or a pending call
// deleted, after the approvals bucket was deleted (nats kv rm, a
// JetStream reset) fails at once, as the reads do
// (TestKVReadOfDeletedBucketFails): its publish finds no responders, as
// during an election, and must not be made again for as long as the
// context lasts, for good when it has no deadline.
func TestKVWriteToDeletedBucketFails(t *testing.T) {
	nc := natstest.Conn(t, natstest.Server(t))
	js := natstest.JS(t, nc)
	st, err := NewKVStore(natstest.Ctx(t), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(natstest.Ctx(t), wire.BucketApprovals); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func(context.Context) error{
		"PutApproval":   func(ctx context.Context) error { return st.PutApproval(ctx, Approval{Session: "s", CallID: "c"}) },
		"DeletePending": func(ctx context.Context) error { return st.DeletePending(ctx, "s", "c") },
	} {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- write(ctx) }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("%s to a deleted bucket succeeded", name)
			} else {
				t.Logf("%s as expected: %v", name, err)
			}
		case <-time.After(natstest.Guard):
			t.Errorf("%s to a deleted bucket, without a deadline, still waits after %v", name, natstest.Guard)
			cancel()
			<-done
		}
		cancel()
	}
}
