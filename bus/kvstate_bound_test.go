package bus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// The session-state buckets are bounded: a caller inventing session names
// fills the bound, not the servers' disks, and a store past it says at
// once what is wrong and what to do.
func TestSessionBucketsAreBounded(t *testing.T) {
	if got := GroupsBucketConfig(nil).MaxBytes; got != DefaultStateMaxBytes {
		t.Errorf("groups bucket MaxBytes = %d, want the default %d", got, DefaultStateMaxBytes)
	}
	if got := GroupsBucketConfig(&KVStateOptions{MaxBytes: -1}).MaxBytes; got != -1 {
		t.Errorf("groups bucket MaxBytes with a negative option = %d, want -1 (no bound)", got)
	}
	if got := SessionsBucketConfig(time.Hour, 1, 0).MaxBytes; got != DefaultStateMaxBytes {
		t.Errorf("sessions bucket MaxBytes = %d, want the default %d", got, DefaultStateMaxBytes)
	}
	if got := SessionsBucketConfig(time.Hour, 1, 1<<20).MaxBytes; got != 1<<20 {
		t.Errorf("sessions bucket MaxBytes = %d, want 1 MiB", got)
	}

	s := natstest.Server(t)
	st := newTestKVState(t, natstest.JS(t, natstest.Conn(t, s)), &KVStateOptions{Bucket: "small", MaxBytes: 16 << 10, MaxWait: time.Minute})
	ctx := natstest.Ctx(t)
	var err error
	n := 0
	for ; n < 10_000 && err == nil; n++ {
		_, err = st.Store(ctx, fmt.Sprintf("session-%d", n), []string{"web", "files"})
	}
	if err == nil {
		t.Fatalf("10,000 sessions stored in a 16 KiB bucket")
	}
	t.Logf("stored %d sessions; then: %v", n-1, err)
	for _, want := range []string{"small", "full", "16384", "max_bytes", "session_ttl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Sessions stored before are still there and may be changed.
	if _, err := st.Store(ctx, "session-0", nil); err != nil {
		t.Errorf("changing a stored session in a full bucket: %v", err)
	}
	if groups, _, ok, err := st.Load(ctx, "session-1", 0); err != nil || !ok || len(groups) != 2 {
		t.Errorf("Load(session-1) = %v, %v, %v", groups, ok, err)
	}
	_ = wire.BucketGroups
}
