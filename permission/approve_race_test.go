package permission

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// pausingStore lets a test hold one FindPending after it has read: the
// moment two approvers of the same call both see it pending.
type pausingStore struct {
	Store
	read    chan struct{} // closed when the held FindPending has read
	release chan struct{} // closed to let it return
	once    sync.Once     // only the first FindPending is held
}

func (s *pausingStore) FindPending(ctx context.Context, session, callID string) ([]Pending, error) {
	ps, err := s.Store.FindPending(ctx, session, callID)
	s.once.Do(func() {
		close(s.read)
		<-s.release
	})
	return ps, err
}

// TestApproveRacingApprovals: two people approve the same pending call at
// once (toolctl approve beside a gateway's elicitation). One approval
// lets the call run once; the other finds it approved already. Before,
// the second approver, which had read the call as pending, stored a new
// approval after the first had been used, and the same call sent once
// more ran a second time.
func TestApproveRacingApprovals(t *testing.T) {
	for name, newStore := range map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return NewMemoryStore() },
		"kv": func(t *testing.T) Store {
			_, js := connect(t, startNATS(t, t.TempDir()))
			return kvStore(t, js, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := newStore(t)
			w := newWorker(t, st, nil)
			in := map[string]any{"env": "prod"}
			wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "c1")

			slow := &pausingStore{Store: st, read: make(chan struct{}), release: make(chan struct{})}
			other, err := NewGuard(slow, nil)
			if err != nil {
				t.Fatal(err)
			}
			second := make(chan error, 1)
			go func() {
				_, err := other.Approve(ctx, "", "c1", "bob")
				second <- err
			}()
			select {
			case <-slow.read:
			case <-time.After(30 * time.Second):
				t.Fatal("the second approver did not read the pending call")
			}
			if _, err := w.g.Approve(ctx, "", "c1", "alice"); err != nil {
				t.Fatal(err)
			}
			wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateSuccess, "", "deployed to prod")
			close(slow.release)
			if err := <-second; !errors.Is(err, ErrNoPending) {
				t.Errorf("the second approval of an approved call: %v, want ErrNoPending", err)
			}
			wantResp(t, w.call(t, "s", "c1", "deploy", in), toolkit.StateDenied, toolkit.CodeApprovalRequired, "")
			if n := w.deploys.Load(); n != 1 {
				t.Fatalf("the approved call ran %d times", n)
			}
		})
	}
}
