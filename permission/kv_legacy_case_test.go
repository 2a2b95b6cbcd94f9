package permission

import (
	"context"
	"testing"
	"time"
)

// TestKVLegacyCasedBehaviorRead: an earlier build's AddRule stored a
// rule's behavior as given ("Deny"), which its Decide then passed over.
// Such a policy is read with the behavior it names (deny), not refused:
// a refused policy is replaced whole by the session's next change, so
// `toolctl allow` would have dropped its deny rules and its mode.
func TestKVLegacyCasedBehaviorRead(t *testing.T) {
	_, js := connect(t, startNATS(t, t.TempDir()))
	st := kvStore(t, js, nil)
	g, err := NewGuard(st, &Options{Mode: ModeBypass})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v := `{"session":"s","mode":"default","rules":[{"tool":"write_text_file","pattern":"/etc/**","behavior":"deny"},{"tool":"deploy","behavior":"Deny"}]}`
	if _, err := st.policies.Create(ctx, sessionKey("s"), []byte(v)); err != nil {
		t.Fatal(err)
	}
	p, err := g.Policy(ctx, "s")
	if err != nil {
		t.Fatalf("the policy with a rule cased Deny: %v", err)
	}
	if len(p.Rules) != 2 || p.Rules[1].Behavior != Deny {
		t.Fatalf("read %+v; want the second rule as deny", p)
	}
	if err := g.Allow(ctx, "s", "read_file"); err != nil { // toolctl allow --session s read_file
		t.Fatal(err)
	}
	if p, err = g.Policy(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if d := Decide(p, writeFile, file("/etc/passwd")); d.Behavior != Deny || p.Mode != ModeDefault || len(p.Rules) != 3 {
		t.Fatalf("after an allow rule: %+v; writing /etc/passwd %s (%s): want the deny rules and the mode kept", p, d.Behavior, d.Reason)
	}
}
