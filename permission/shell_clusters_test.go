package permission

import "testing"

// TestDenyRuleSeesWrapperOptionClusters: a wrapper's short options may be
// clustered, the last one taking the next word as its value (sudo -Eu
// root rm: root is -u's), or one taking the rest of its word (env
// -S'rm x'); GNU time's -o and -f take a value too. The command after
// them is what runs.
func TestDenyRuleSeesWrapperOptionClusters(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"sudo -Eu root rm -rf x",
		"xargs -0n 1 rm -rf",
		"xargs -rI {} rm -rf {}",
		"timeout -vs KILL 5 rm -rf x",
		"ionice -tc 3 rm -rf x",
		"env -S'rm -rf x'",
		"env -iS'rm -rf x'",
		"command time -o log rm -rf x",
		"/usr/bin/time -f %e rm -rf x",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"sudo -Eu root ls", "xargs -0n 1 echo rm"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}
