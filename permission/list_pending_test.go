package permission

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// Both stores list the calls waiting for approval the longest waiting
// first, one session's or every session's, at most limit of them; the
// Guard leaves out those past the approval TTL.
func TestListPending(t *testing.T) {
	s := natstest.Embedded(t, false)
	stores := map[string]Store{
		"memory": NewMemoryStore(),
		"kv":     kvStore(t, natstest.JS(t, natstest.Connect(t, s)), nil),
	}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			now := time.Now().UTC()
			put := func(session, id string, age time.Duration) {
				t.Helper()
				if err := st.PutPending(ctx, Pending{Session: session, CallID: id, Tool: "deploy", Created: now.Add(-age)}); err != nil {
					t.Fatal(err)
				}
			}
			put("s1", "a", 30*time.Hour) // past the default TTL: the Guard leaves it out
			put("s1", "b", time.Hour)
			put("\x00bob\x00s2", "c", time.Minute)
			put("s1", "d", time.Second)
			ids := func(ps []Pending) (out []string) {
				for _, p := range ps {
					out = append(out, p.Session+"/"+p.CallID)
				}
				return out
			}
			for _, tc := range []struct {
				session string
				limit   int
				want    []string
				more    bool
			}{
				{"", 10, []string{"s1/a", "s1/b", "\x00bob\x00s2/c", "s1/d"}, false},
				{"", 2, []string{"s1/a", "s1/b"}, true},
				{"s1", 10, []string{"s1/a", "s1/b", "s1/d"}, false},
				{"\x00bob\x00s2", 10, []string{"\x00bob\x00s2/c"}, false},
				{"s3", 10, nil, false},
			} {
				ps, more, err := st.ListPending(ctx, tc.session, tc.limit)
				if err != nil || !slices.Equal(ids(ps), tc.want) || more != tc.more {
					t.Errorf("ListPending(%q, %d) = %q, %v, %v; want %q, %v", tc.session, tc.limit, ids(ps), more, err, tc.want, tc.more)
				}
			}
			g, err := NewGuard(st, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := "[s1/b \x00bob\x00s2/c s1/d]"
			if name == "kv" {
				// Aged on the server's clock, not by Created (the writer's):
				// the server stored them all a moment ago.
				want = "[s1/a s1/b \x00bob\x00s2/c s1/d]"
			}
			ps, _, err := g.ListPending(ctx, "", 10)
			if got := fmt.Sprint(ids(ps)); err != nil || got != want {
				t.Errorf("Guard.ListPending: %q, %v", got, err)
			}
			if _, _, err := g.ListPending(ctx, "", 0); err == nil {
				t.Error("Guard.ListPending with limit 0: no error")
			}
		})
	}
}
