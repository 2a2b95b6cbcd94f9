package bus

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/internal/natstest"
)

// The group-state bucket is bounded by a count of sessions: a caller
// inventing session names fills the bound, not the servers' disks, and a
// store past it says at once what is wrong and what to do. A count, not
// bytes: a bound in bytes is reserved from the server's store when the
// bucket is made.
func TestGroupsBucketIsBounded(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	newTestKVState(t, js, nil)
	info, err := js.Stream(ctx, "KV_toolbus_groups")
	if err != nil {
		t.Fatal(err)
	}
	if c := info.CachedInfo().Config; c.MaxMsgs != DefaultMaxStoredSessions || c.MaxBytes > 0 {
		t.Errorf("default bucket: max_msgs %d, max_bytes %d; want %d sessions and no byte bound", c.MaxMsgs, c.MaxBytes, DefaultMaxStoredSessions)
	}
	newTestKVState(t, js, &KVStateOptions{Bucket: "unbounded", MaxSessions: -1})
	if info, err := js.Stream(ctx, "KV_unbounded"); err != nil || info.CachedInfo().Config.MaxMsgs != -1 {
		t.Errorf("MaxSessions -1: %v", err)
	}

	st := newTestKVState(t, js, &KVStateOptions{Bucket: "small", MaxSessions: 100, MaxWait: time.Minute})
	n := 0
	for ; n < 10_000 && err == nil; n++ {
		_, err = st.Store(ctx, fmt.Sprintf("session-%d", n), []string{"web", "files"})
	}
	if err == nil || n-1 != 100 {
		t.Fatalf("stored %d sessions in a bucket of 100, then %v", n-1, err)
	}
	t.Logf("stored %d sessions; then: %v", n-1, err)
	for _, want := range []string{`"small"`, "full", "max_msgs 100", "nats stream edit KV_small --max-msgs", "state.max_sessions", "session_ttl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := st.Store(ctx, "session-0", []string{"files", "web", "exec"}); err != nil {
		t.Errorf("changing a stored session in a full bucket: %v", err)
	}
}

// A groups bucket an operator bounded (nats kv edit --max-bucket-size)
// refuses new sessions once full: the store says so at once, with what to
// do, instead of retrying the refusal as a passing JetStream moment until
// its wait runs out; the sessions stored before keep working.
func TestFullGroupsBucketSaysSo(t *testing.T) {
	s := natstest.Server(t)
	js := natstest.JS(t, natstest.Conn(t, s))
	ctx := natstest.Ctx(t)
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "small", History: 1, MaxBytes: 16 << 10}); err != nil {
		t.Fatal(err)
	}
	st := newTestKVState(t, js, &KVStateOptions{Bucket: "small", MaxWait: time.Minute})
	var err error
	n := 0
	for ; n < 10_000 && err == nil; n++ {
		_, err = st.Store(ctx, fmt.Sprintf("session-%d", n), []string{"web", "files"})
	}
	if err == nil {
		t.Fatal("10,000 sessions stored in a 16 KiB bucket")
	}
	t.Logf("stored %d sessions; then: %v", n-1, err)
	for _, want := range []string{"small", "full", "max_bytes 16384", "--max-bucket-size", "session_ttl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := st.Store(ctx, "session-0", nil); err != nil {
		t.Errorf("changing a stored session in a full bucket: %v", err)
	}
	if groups, _, ok, err := st.Load(ctx, "session-1", 0); err != nil || !ok || len(groups) != 2 {
		t.Errorf("Load(session-1) = %v, %v, %v", groups, ok, err)
	}
}
