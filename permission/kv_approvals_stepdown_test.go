package permission

import (
	"context"
	"fmt"
	"path"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestKVApprovalWritesThroughLeaderStepdowns: the approvals bucket's
// stream leader steps down again and again while pending calls and
// approvals are written, deleted, approved and consumed. Every write is
// done within its caller's deadline, and keeps its meaning: a write whose
// answer the stepdown dropped was waited for until that deadline (context
// deadline exceeded), or failed at once with the stepdown's 503; an
// approval is consumed exactly once by two workers racing for it.
func TestKVApprovalWritesThroughLeaderStepdowns(t *testing.T) {
	st, admin := stepdownStore(t)
	stop := natstest.Stepdowns(t, admin, "KV_toolbus_approvals")
	defer func() { t.Logf("%d leader stepdowns", stop()) }()
	const workers = 6
	// each runs round in workers in parallel, each a round after the
	// other for a few seconds: through several stepdowns.
	each := func(t *testing.T, round func(session, callID string)) {
		end := time.Now().Add(5 * time.Second)
		var wg sync.WaitGroup
		for w := range workers {
			session := fmt.Sprint("s", w)
			wg.Go(func() {
				for i := 0; time.Now().Before(end); i++ {
					if t.Failed() {
						return
					}
					round(session, fmt.Sprint(path.Base(t.Name()), "-", i))
				}
			})
		}
		wg.Wait()
	}
	// call runs a write under test with a deadline, failing the test on
	// its error.
	call := func(t *testing.T, what string, fn func(ctx context.Context) error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := fn(ctx); err != nil {
			t.Errorf("%s: %v", what, err)
		}
	}
	// leader reads key's last message from the stream leader.
	leader := func(key string) kv.Entry {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			e, err := kv.LeaderGet(ctx, st.js, st.approvals.Bucket(), key)
			cancel()
			if err == nil {
				return e
			}
		}
	}
	// stored fails the test unless key's last message is a value, or
	// unless it is none (want false).
	stored := func(t *testing.T, key string, want bool) {
		if e := leader(key); e.Found != want {
			t.Errorf("after %s: %s has a value: %v, want %v", path.Base(t.Name()), key, e.Found, want)
		}
	}
	pending := func(session, callID string) Pending {
		return Pending{Session: session, CallID: callID, Tool: "t", Digest: "d", Created: time.Now().UTC()}
	}
	approval := func(session, callID string) Approval {
		return Approval{Session: session, CallID: callID, Tool: "t", Digest: "d", By: "op", Created: time.Now().UTC()}
	}

	t.Run("PutPending", func(t *testing.T) {
		each(t, func(session, id string) {
			call(t, session+" "+id, func(ctx context.Context) error { return st.PutPending(ctx, pending(session, id)) })
			stored(t, pendingKey(session, id), true)
		})
	})
	t.Run("DeletePending", func(t *testing.T) {
		each(t, func(session, id string) {
			untilDone(func(ctx context.Context) error { return st.PutPending(ctx, pending(session, id)) })
			call(t, session+" "+id, func(ctx context.Context) error { return st.DeletePending(ctx, session, id) })
			stored(t, pendingKey(session, id), false)
		})
	})
	t.Run("ApprovePending", func(t *testing.T) {
		each(t, func(session, id string) {
			p := pending(session, id)
			untilDone(func(ctx context.Context) error { return st.PutPending(ctx, p) })
			p.Revision = leader(pendingKey(session, id)).Revision
			call(t, session+" "+id, func(ctx context.Context) error {
				ok, err := st.ApprovePending(ctx, p, approval(session, id))
				if err == nil && !ok {
					err = fmt.Errorf("not approved")
				}
				return err
			})
			stored(t, approvalKey(session, id), true)
			stored(t, pendingKey(session, id), false)
		})
	})
	t.Run("PutApproval", func(t *testing.T) {
		each(t, func(session, id string) {
			call(t, session+" "+id, func(ctx context.Context) error { return st.PutApproval(ctx, approval(session, id)) })
			stored(t, approvalKey(session, id), true)
		})
	})
	t.Run("ConsumeApproval", func(t *testing.T) {
		each(t, func(session, id string) {
			a := approval(session, id)
			untilDone(func(ctx context.Context) error { return st.PutApproval(ctx, a) })
			a.Revision = leader(approvalKey(session, id)).Revision
			// Two workers consume it at once: exactly one may use it.
			var used atomic.Int32
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					call(t, session+" "+id, func(ctx context.Context) error {
						ok, err := st.ConsumeApproval(ctx, a)
						if ok {
							used.Add(1)
						}
						return err
					})
				})
			}
			wg.Wait()
			if n := used.Load(); n != 1 && !t.Failed() {
				t.Errorf("ConsumeApproval %s %s: used %d times, want once", session, id, n)
			}
		})
	})
}
