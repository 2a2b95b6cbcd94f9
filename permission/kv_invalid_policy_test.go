package permission

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// TestKVPolicyNotOfThisBuildRefused: a stored policy whose mode is not one
// of the modes, or with a rule that is not valid (a pattern with
// surrounding spaces), is refused as an unreadable
// value (the session's calls end unavailable until the operator sets it
// again), not read as a looser one: the rule was ignored and the mode
// read as default with its safety asks open to allow rules. (A behavior
// cased "DENY", as earlier builds stored it: TestKVLegacyCasedBehaviorRead.)
func TestKVPolicyNotOfThisBuildRefused(t *testing.T) {
	_, js := connect(t, startNATS(t, t.TempDir()))
	st := kvStore(t, js, nil)
	w := newWorker(t, st, &Options{Mode: ModeBypass})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, v := range []string{
		`{"session":"s%d","rules":[{"tool":"deploy","pattern":" x","behavior":"deny"}]}`,
		`{"session":"s%d","mode":"Explore"}`,
		`{"session":"s%d","mode":"superuser"}`,
	} {
		session := "s" + string(rune('0'+i))
		if _, err := st.policies.Create(ctx, sessionKey(session), []byte(fmtSession(v, i))); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.LoadSession(ctx, session); !errors.Is(err, ErrUnreadable) {
			t.Errorf("%s: load: %v, want ErrUnreadable", v, err)
		}
		r := w.call(t, session, "c", "deploy", map[string]any{"env": "prod"})
		if r.Code != toolkit.CodeUnavailable {
			t.Errorf("%s: deploy ended %s/%s %q, want unavailable", v, r.State, r.Code, r.Text())
		}
		// The operator sets it again: it is read.
		if err := w.g.SetMode(ctx, session, ModeExplore); err != nil {
			t.Fatal(err)
		}
		if p, _, err := st.LoadSession(ctx, session); err != nil || p.Mode != ModeExplore || len(p.Rules) != 0 {
			t.Errorf("%s: set again: %+v %v", v, p, err)
		}
	}
	if n := w.deploys.Load(); n != 0 {
		t.Fatalf("deploy ran %d times", n)
	}
	// The same rule given to the Go API is refused, not passed over.
	if _, err := NewGuard(nil, &Options{Mode: ModeBypass, Rules: []Rule{{Tool: "deploy", Behavior: "Deny"}}}); err == nil {
		t.Error("NewGuard took a rule of behavior \"Deny\"")
	}
	if err := w.g.AddRule(ctx, "s9", Rule{Tool: "deploy", Behavior: "DENY"}); err == nil {
		t.Error("AddRule took a rule of behavior \"DENY\"")
	}
	if r, err := ParseRule("deploy", "DENY"); err != nil || r.Behavior != Deny {
		t.Errorf("ParseRule(deploy, DENY) = %+v, %v; want behavior deny", r, err)
	}
}

func fmtSession(v string, i int) string {
	return strings.Replace(v, "%d", string(rune('0'+i)), 1)
}
