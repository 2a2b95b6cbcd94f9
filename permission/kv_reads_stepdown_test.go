package permission

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKVReadsThroughLeaderStepdowns: both buckets' stream leaders step
// down again and again while policies, approvals and pending calls are
// read, listed and approved, then the cluster loses its quorum for a
// moment while they are read. Every read is answered within its caller's
// deadline, and a listing is whole (WithoutLeader: a listing's consumer
// asked for without a leader was waited for until the caller's deadline,
// or refused at once with a 503).
func TestKVReadsThroughLeaderStepdowns(t *testing.T) {
	st, admin, cl := stepdownCluster(t)
	g, err := NewGuard(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 4
	const listed = 40 // pending calls listed, over every session
	now := time.Now().UTC()
	for s := range sessions {
		session := fmt.Sprint("s", s)
		untilDone(func(ctx context.Context) error {
			_, err := st.UpdateSession(ctx, session, func(p *SessionPolicy) error { p.Mode = ModeExplore; return nil })
			return err
		})
		untilDone(func(ctx context.Context) error {
			return st.PutApproval(ctx, Approval{Session: session, CallID: "kept", Tool: "t", Digest: "d", By: "op", Created: now})
		})
		for i := range listed / sessions {
			untilDone(func(ctx context.Context) error {
				return st.PutPending(ctx, Pending{Session: session, CallID: fmt.Sprint("p", i), Tool: "t", Digest: "d", Created: now})
			})
		}
	}
	stop := []func() int{
		natstest.Stepdowns(t, admin, "KV_toolbus_permissions"),
		natstest.Stepdowns(t, admin, "KV_toolbus_approvals"),
	}
	stopped := sync.OnceFunc(func() {
		for _, stop := range stop {
			t.Logf("%d leader stepdowns", stop())
		}
	})
	defer stopped()
	// each runs round, with a deadline of d, in sessions workers at
	// once, each a round after the other for a few seconds: through
	// several stepdowns.
	each := func(t *testing.T, d time.Duration, round func(ctx context.Context, session string, i int) error) {
		end := time.Now().Add(4 * time.Second)
		var wg sync.WaitGroup
		for s := range sessions {
			session := fmt.Sprint("s", s)
			wg.Go(func() {
				for i := 0; time.Now().Before(end) && !t.Failed(); i++ {
					ctx, cancel := context.WithTimeout(context.Background(), d)
					err := round(ctx, session, i)
					cancel()
					if err != nil {
						t.Errorf("%s %s round %d: %v", path.Base(t.Name()), session, i, err)
					}
				}
			})
		}
		wg.Wait()
	}
	// A call's check, with a call's deadline of a few seconds: its
	// session's policy, then its approval.
	const callDeadline = 4 * time.Second
	t.Run("Policy", func(t *testing.T) {
		each(t, callDeadline, func(ctx context.Context, session string, _ int) error {
			p, err := g.Policy(ctx, session)
			if err == nil && p.Mode != ModeExplore {
				err = fmt.Errorf("mode %q, want %q", p.Mode, ModeExplore)
			}
			return err
		})
	})
	t.Run("LoadApproval", func(t *testing.T) {
		each(t, callDeadline, func(ctx context.Context, session string, _ int) error {
			_, ok, err := st.LoadApproval(ctx, session, "kept")
			if err == nil && !ok {
				err = fmt.Errorf("no approval")
			}
			return err
		})
	})
	// toolctl pending: every session's pending calls, all of them.
	t.Run("ListPending", func(t *testing.T) {
		each(t, 10*time.Second, func(ctx context.Context, _ string, _ int) error {
			ps, more, err := g.ListPending(ctx, "", 1000)
			if err == nil && (len(ps) != listed || more) {
				err = fmt.Errorf("listed %d pending calls (more: %v), want %d", len(ps), more, listed)
			}
			return err
		})
	})
	// toolctl approve without a session: the call id's pending calls of
	// every session.
	t.Run("FindPending", func(t *testing.T) {
		each(t, 10*time.Second, func(ctx context.Context, _ string, i int) error {
			ps, err := st.FindPending(ctx, "", fmt.Sprint("p", i%(listed/sessions)))
			if err == nil && len(ps) != sessions {
				err = fmt.Errorf("found %d pending calls, want %d", len(ps), sessions)
			}
			return err
		})
	})
	t.Run("Approve", func(t *testing.T) {
		each(t, 10*time.Second, func(ctx context.Context, session string, i int) error {
			id := fmt.Sprint("a", i)
			untilDone(func(ctx context.Context) error {
				return st.PutPending(ctx, Pending{Session: session, CallID: id, Tool: "t", Digest: "d", Created: time.Now().UTC()})
			})
			for {
				// A replica a moment behind may not have the pending
				// call yet: asked again.
				_, err := g.Approve(ctx, session, id, "op")
				if !errors.Is(err, ErrNoPending) || ctx.Err() != nil {
					return err
				}
			}
		})
	})
	// The cluster without a quorum for a moment: no stream has a leader,
	// no consumer is made. The reads asked meanwhile are answered once it
	// is back, within their deadline: a listing's consumer asked for
	// meanwhile was waited for until that deadline, or refused at once
	// (503), and the listing failed.
	t.Run("WithoutLeader", func(t *testing.T) {
		stopped()
		restore := cl.LoseQuorum()
		reads := map[string]func(ctx context.Context) error{
			"ListPending": func(ctx context.Context) error {
				ps, more, err := g.ListPending(ctx, "", 1000)
				if err == nil && (len(ps) != listed || more) {
					err = fmt.Errorf("listed %d pending calls (more: %v), want %d", len(ps), more, listed)
				}
				return err
			},
			"FindPending": func(ctx context.Context) error {
				ps, err := st.FindPending(ctx, "", "p0")
				if err == nil && len(ps) != sessions {
					err = fmt.Errorf("found %d pending calls, want %d", len(ps), sessions)
				}
				return err
			},
			"Policy": func(ctx context.Context) error {
				_, err := g.Policy(ctx, "s0")
				return err
			},
			"LoadApproval": func(ctx context.Context) error {
				_, _, err := st.LoadApproval(ctx, "s0", "kept")
				return err
			},
		}
		var wg sync.WaitGroup
		for name, read := range reads {
			wg.Go(func() {
				// A call's check has a call's deadline.
				d := 30 * time.Second
				if name == "Policy" || name == "LoadApproval" {
					d = callDeadline
				}
				ctx, cancel := context.WithTimeout(context.Background(), d)
				defer cancel()
				if err := read(ctx); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			})
		}
		// The moment without a quorum, while the reads are asked.
		_ = kv.Sleep(context.Background(), 2*time.Second)
		restore()
		wg.Wait()
	})
	// A call that asks for approval, sent without a deadline while the
	// cluster has no quorum: it is answered, whether or not its ask could
	// be recorded, and not offered for approval when it could not. Recording it (PutPending) was waited for as long as
	// the cluster stayed without a leader: the call hung.
	t.Run("CallWithoutLeader", func(t *testing.T) {
		stopped()
		restore := cl.LoseQuorum()
		defer restore()
		w := newWorker(t, st, nil)
		answered := make(chan *toolkit.Response, 1)
		go func() { answered <- w.call(t, "s9", "x", "deploy", map[string]any{"env": "prod"}) }()
		select {
		case r := <-answered:
			if r.Code != toolkit.CodeApprovalRequired && r.Code != toolkit.CodeUnavailable {
				t.Errorf("the call ended with %q, want approval_required or unavailable: %+v", r.Code, r)
			}
			// Its ask cannot have been recorded without a leader: it is
			// not offered for approval (toolctl approve would find
			// nothing).
			if _, ok := r.Metadata[MetaApprovalKey]; ok {
				t.Errorf("the call's ask was not recorded, but its final offers it for approval: %q %v", r.Text(), r.Metadata)
			}
		case <-time.After(natstest.Guard):
			t.Fatalf("the call was not answered after %v without a leader", natstest.Guard)
		}
	})
}
