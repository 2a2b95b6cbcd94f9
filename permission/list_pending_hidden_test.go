package permission

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// Guard.ListPending took limit calls from the store and then left out
// those that wait for nobody (allowed since, expired): with the first
// limit calls of the bucket all allowed since (a session set to bypass
// after it asked many times), `toolctl pending` showed no call at all
// and "more calls wait than the 50 shown", the calls that do wait behind
// them out of sight whatever --limit an operator tried below their
// number. The limit counts the calls listed; more says that calls that
// wait were left out, not that hidden ones were.
func TestListPendingLimitCountsWaitingCalls(t *testing.T) {
	stores := map[string]func(t *testing.T) Store{
		"memory": func(*testing.T) Store { return NewMemoryStore() },
		// A Store of another package: one ListPending after another.
		"other": func(*testing.T) Store { return struct{ Store }{NewMemoryStore()} },
		"kv": func(t *testing.T) Store {
			js := natstest.JS(t, natstest.Conn(t, natstest.Server(t)))
			st, err := NewKVStore(natstest.Ctx(t), js, nil)
			if err != nil {
				t.Fatal(err)
			}
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			g, err := NewGuard(st, nil)
			if err != nil {
				t.Fatal(err)
			}
			put := func(session, id string) {
				t.Helper()
				p := Pending{Session: session, CallID: id, Tool: "deploy", Reason: "mode", Digest: "sha256:x", Created: time.Now().UTC()}
				if err := st.PutPending(ctx, p); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 5 {
				put("bypassed", fmt.Sprintf("b%d", i))
			}
			put("waits", "w1")
			put("waits", "w2")
			for i := range 3 {
				put("bypassed", fmt.Sprintf("c%d", i))
			}
			if err := g.SetMode(ctx, "bypassed", ModeBypass); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				limit int
				want  []string
				more  bool
			}{
				{1, []string{"w1"}, true},
				{2, []string{"w1", "w2"}, false},
				{3, []string{"w1", "w2"}, false},
				{100, []string{"w1", "w2"}, false},
			} {
				ps, more, err := g.ListPending(ctx, "", tc.limit)
				var got []string
				for _, p := range ps {
					got = append(got, p.CallID)
				}
				if err != nil || !slices.Equal(got, tc.want) || more != tc.more {
					t.Errorf("ListPending(limit %d) = %q, more %v, %v; want %q, more %v", tc.limit, got, more, err, tc.want, tc.more)
				}
			}
		})
	}
}
