package permission

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestKVReadWaitsOutAnElection: a session's policy read while the
// policies bucket has no leader for the moment (two of three nodes down)
// is answered (by the replica left up, or once the nodes are back) within
// the call's context, never failed: the
// call it is for ran into "no responders" and ended unavailable while the
// cluster elected a leader.
func TestKVReadWaitsOutAnElection(t *testing.T) {
	cl := natstest.NewCluster(t)
	nc := natstest.URLConn(t, cl.URLs())
	js := natstest.JS(t, nc)
	st, err := NewKVStore(natstest.Ctx(t), js, &KVConfig{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateSession(natstest.Ctx(t), "s", func(p *SessionPolicy) error { p.Mode = ModeExplore; return nil }); err != nil {
		t.Fatal(err)
	}
	restore := cl.LoseQuorum() // the client's node stays up
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	type read struct {
		p   SessionPolicy
		ok  bool
		err error
	}
	done := make(chan read, 1)
	go func() {
		p, ok, err := st.LoadSession(ctx, "s")
		done <- read{p, ok, err}
	}()
	select {
	case r := <-done:
		// The node left up holds a replica, which may answer a direct
		// get without a leader: then with the policy, never an error.
		if r.err != nil || !r.ok || r.p.Mode != ModeExplore {
			t.Fatalf("without a quorum, gave up at once: %+v", r)
		}
		return
	case <-time.After(2 * time.Second):
	}
	restore()
	if r := <-done; r.err != nil || !r.ok || r.p.Mode != ModeExplore {
		t.Fatalf("after the nodes came back: %+v", r)
	}
}
