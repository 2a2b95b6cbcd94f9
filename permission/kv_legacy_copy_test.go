package permission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// TestKVLegacyPolicyHeaderlessCopy: a policy written by an earlier build
// has no session scope in its value. A direct get of it asked with no_hdr
// (the stored value alone) sent with another session's policy key as its
// reply subject stores a copy there that no scope tells apart; the copy
// is refused, while the earlier build's value itself is still read.
func TestKVLegacyPolicyHeaderlessCopy(t *testing.T) {
	s := startNATS(t, t.TempDir())
	nc, js := connect(t, s)
	st := kvStore(t, js, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open, locked := toolkit.SessionScope("alice", "open"), toolkit.SessionScope("alice", "locked")
	// As an earlier build stored them: compare-and-set, no scope.
	if _, err := st.policies.Create(ctx, sessionKey(open), []byte(`{"mode":"bypass"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.policies.Create(ctx, sessionKey(locked), []byte(`{"mode":"explore"}`)); err != nil {
		t.Fatal(err)
	}
	if p, ok, err := st.LoadSession(ctx, locked); err != nil || !ok || p.Mode != ModeExplore {
		t.Fatalf("an earlier build's explore policy: %+v %v %v", p, ok, err)
	}
	bucket := st.policies.Bucket()
	get := "$JS.API.DIRECT.GET.KV_" + bucket + ".$KV." + bucket + "." + sessionKey(open)
	before, err := st.policies.Get(ctx, sessionKey(locked))
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishRequest(get, "$KV."+bucket+"."+sessionKey(locked), []byte(`{"no_hdr":true}`)); err != nil {
		t.Fatal(err)
	}
	for {
		e, err := st.policies.Get(ctx, sessionKey(locked))
		if err != nil {
			t.Fatal(err)
		}
		if e.Revision() != before.Revision() {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	p, _, err := st.LoadSession(ctx, locked)
	if !errors.Is(err, ErrUnreadable) {
		t.Fatalf("a headerless copy of an earlier build's bypass policy over an explore one: %+v, %v; want ErrUnreadable", p, err)
	}
	if p, ok, err := st.LoadSession(ctx, open); err != nil || !ok || p.Mode != ModeBypass {
		t.Errorf("the earlier build's bypass policy itself: %+v %v %v", p, ok, err)
	}
}
