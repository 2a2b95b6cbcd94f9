package permission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// storeSuite is the behaviour every Store must have; it runs against
// MemoryStore and KVStore.
func storeSuite(t *testing.T, newStore func(t *testing.T) Store) {
	ctx := context.Background()
	// plain, empty, key-unsafe, and the same names as caller identities'
	sessions := []string{"s1", "", "a.b c/é*>", toolkit.SessionScope("alice", "s1"), toolkit.SessionScope("bob", "s1"), toolkit.SessionScope("alice", "a.b c/é*>")}
	calls := []string{"c1", "x y.z"}

	t.Run("sessions", func(t *testing.T) {
		st := newStore(t)
		for _, s := range sessions {
			if _, ok, err := st.LoadSession(ctx, s); err != nil || ok {
				t.Fatalf("fresh session %q: ok=%v err=%v", s, ok, err)
			}
			p, err := st.UpdateSession(ctx, s, func(p *SessionPolicy) error {
				p.Mode = ModeExplore
				p.Rules = append(p.Rules, Rule{Tool: "t_" + fmt.Sprint(len(s)), Behavior: Allow})
				return nil
			})
			if err != nil || p.Mode != ModeExplore {
				t.Fatalf("update %q: %+v %v", s, p, err)
			}
		}
		for _, s := range sessions {
			p, ok, err := st.LoadSession(ctx, s)
			if err != nil || !ok || p.Mode != ModeExplore || len(p.Rules) != 1 || p.Rules[0].Tool != "t_"+fmt.Sprint(len(s)) {
				t.Fatalf("load %q: %+v %v %v", s, p, ok, err)
			}
		}
		// An error from fn changes nothing.
		if _, err := st.UpdateSession(ctx, "s1", func(p *SessionPolicy) error {
			p.Mode = ModeBypass
			return fmt.Errorf("no")
		}); err == nil {
			t.Fatal("fn error not returned")
		}
		if p, _, _ := st.LoadSession(ctx, "s1"); p.Mode != ModeExplore {
			t.Fatalf("aborted update applied: %+v", p)
		}
	})

	t.Run("concurrent updates lose nothing", func(t *testing.T) {
		st := newStore(t)
		var wg sync.WaitGroup
		const n = 8
		for i := range n {
			wg.Go(func() {
				_, err := st.UpdateSession(ctx, "s", func(p *SessionPolicy) error {
					p.Rules = append(p.Rules, Rule{Tool: fmt.Sprintf("t%d", i), Behavior: Allow})
					return nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if p, _, _ := st.LoadSession(ctx, "s"); len(p.Rules) != n {
			t.Fatalf("%d rules after %d concurrent adds", len(p.Rules), n)
		}
	})

	t.Run("pending", func(t *testing.T) {
		st := newStore(t)
		now := time.Now().UTC().Truncate(time.Millisecond)
		for i, s := range sessions {
			for _, c := range calls {
				p := Pending{Session: s, CallID: c, Tool: "deploy", Digest: "sha256:x", Input: `{"a":1}`, Reason: "mode",
					Suggested: []Rule{{Tool: "deploy", Behavior: Allow, Source: "suggested"}}, Created: now.Add(time.Duration(i) * time.Second)}
				if err := st.PutPending(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, c := range calls {
			all, err := st.FindPending(ctx, "", c)
			if err != nil || len(all) != len(sessions) {
				t.Fatalf("find %q in any session: %d %v", c, len(all), err)
			}
			for i, p := range all {
				if p.Session != sessions[i] || p.CallID != c || p.Tool != "deploy" || len(p.Suggested) != 1 || !p.Created.Equal(now.Add(time.Duration(i)*time.Second)) {
					t.Fatalf("pending %d: %+v", i, p)
				}
			}
			one, err := st.FindPending(ctx, "s1", c)
			if err != nil || len(one) != 1 || one[0].Session != "s1" {
				t.Fatalf("find %q in s1: %+v %v", c, one, err)
			}
		}
		if got, err := st.FindPending(ctx, "", "nope"); err != nil || len(got) != 0 {
			t.Fatalf("unknown id: %v %v", got, err)
		}
		if err := st.DeletePending(ctx, "s1", "c1"); err != nil {
			t.Fatal(err)
		}
		if err := st.DeletePending(ctx, "s1", "never"); err != nil {
			t.Fatalf("deleting an unknown pending call: %v", err)
		}
		if got, _ := st.FindPending(ctx, "s1", "c1"); len(got) != 0 {
			t.Fatalf("deleted pending still found: %v", got)
		}
		if got, _ := st.FindPending(ctx, "", "c1"); len(got) != len(sessions)-1 {
			t.Fatalf("delete removed too much: %v", got)
		}
	})

	t.Run("approvals are consumed once", func(t *testing.T) {
		st := newStore(t)
		for _, s := range sessions {
			for _, c := range calls {
				if _, ok, err := st.LoadApproval(ctx, s, c); ok || err != nil {
					t.Fatalf("fresh approval: %v %v", ok, err)
				}
				a := Approval{Session: s, CallID: c, Tool: "deploy", Digest: "sha256:x", By: "alice", Created: time.Now().UTC()}
				if err := st.PutApproval(ctx, a); err != nil {
					t.Fatal(err)
				}
				got, ok, err := st.LoadApproval(ctx, s, c)
				if err != nil || !ok || got.Tool != "deploy" || got.Digest != "sha256:x" || got.By != "alice" || got.Revision == 0 {
					t.Fatalf("load: %+v %v %v", got, ok, err)
				}
				if used, err := st.ConsumeApproval(ctx, got); err != nil || !used {
					t.Fatalf("first consume: %v %v", used, err)
				}
				if used, err := st.ConsumeApproval(ctx, got); err != nil || used {
					t.Fatalf("second consume: %v %v", used, err)
				}
				if _, ok, _ := st.LoadApproval(ctx, s, c); ok {
					t.Fatal("consumed approval still loads")
				}
			}
		}
		// A stale revision (the approval was replaced) is not consumed.
		a := Approval{Session: "s", CallID: "c", Tool: "t", Digest: "d", Created: time.Now()}
		_ = st.PutApproval(ctx, a)
		old, _, _ := st.LoadApproval(ctx, "s", "c")
		_ = st.PutApproval(ctx, a)
		if used, err := st.ConsumeApproval(ctx, old); err != nil || used {
			t.Fatalf("stale revision consumed: %v %v", used, err)
		}
		cur, _, _ := st.LoadApproval(ctx, "s", "c")
		if used, _ := st.ConsumeApproval(ctx, cur); !used {
			t.Fatal("current revision not consumed")
		}
	})

	t.Run("a pending call is approved once, as read", func(t *testing.T) {
		st := newStore(t)
		p := Pending{Session: "s", CallID: "c", Tool: "t", Digest: "d", Created: time.Now().UTC()}
		a := Approval{Session: "s", CallID: "c", Tool: "t", Digest: "d", By: "alice", Created: time.Now().UTC()}
		_ = st.PutPending(ctx, p)
		old, _ := st.FindPending(ctx, "s", "c")
		_ = st.PutPending(ctx, p) // asked again: another revision
		if approved, err := st.ApprovePending(ctx, old[0], a); err != nil || approved {
			t.Fatalf("stale revision approved: %v %v", approved, err)
		}
		cur, _ := st.FindPending(ctx, "", "c")
		var mu sync.Mutex
		wins := 0
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				if approved, err := st.ApprovePending(ctx, cur[0], a); err != nil {
					t.Error(err)
				} else if approved {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d approvers won", wins)
		}
		if got, _ := st.FindPending(ctx, "s", "c"); len(got) != 0 {
			t.Fatalf("approved pending call still found: %v", got)
		}
		// Asked again before its approval was used, then used: the ask
		// recorded before the use is answered, not approved again.
		_ = st.PutPending(ctx, p)
		asked, _ := st.FindPending(ctx, "s", "c")
		got, ok, err := st.LoadApproval(ctx, "s", "c")
		if err != nil || !ok {
			t.Fatalf("the approval: %v %v", ok, err)
		}
		if used, err := st.ConsumeApproval(ctx, got); err != nil || !used {
			t.Fatalf("consume: %v %v", used, err)
		}
		if approved, err := st.ApprovePending(ctx, asked[0], a); !errors.Is(err, ErrApprovalUsed) || approved {
			t.Fatalf("an ask recorded before the approval's use approved again: %v %v", approved, err)
		}
		if left, err := st.FindPending(ctx, "s", "c"); err != nil || len(left) != 0 {
			t.Fatalf("an ask answered by the approval's use still waits: %v %v", left, err)
		}
		// Asked after the use: approved anew.
		_ = st.PutPending(ctx, p)
		again, _ := st.FindPending(ctx, "s", "c")
		if approved, err := st.ApprovePending(ctx, again[0], a); err != nil || !approved {
			t.Fatalf("an ask after the use: %v %v", approved, err)
		}
	})

	t.Run("racing consumers: exactly one wins", func(t *testing.T) {
		st := newStore(t)
		_ = st.PutApproval(ctx, Approval{Session: "s", CallID: "c", Tool: "t", Digest: "d", Created: time.Now()})
		a, _, _ := st.LoadApproval(ctx, "s", "c")
		var mu sync.Mutex
		wins := 0
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				if used, err := st.ConsumeApproval(ctx, a); err != nil {
					t.Error(err)
				} else if used {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d consumers won", wins)
		}
	})
}

func TestMemoryStore(t *testing.T) {
	storeSuite(t, func(*testing.T) Store { return NewMemoryStore() })
}
