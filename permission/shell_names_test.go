package permission

import "testing"

// TestDenyRuleSeesSubstitutedNames: a command whose name is the output of
// a command substitution ($(echo rm) x, `echo rm` x) may be any command,
// as one named by a variable: every deny and ask pattern matches it. In
// bypass mode the substitution's safety ask lets it run, so the deny rule
// is all that stands.
func TestDenyRuleSeesSubstitutedNames(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"$(echo rm) -rf y",
		"`echo rm` -rf y",
		`"$(echo rm)" -rf y`,
		"r$(echo m) -rf y",
		"sudo `echo rm` -rf y",
		"sudo $(echo rm) -rf y",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"echo $(date)", "ls `pwd`"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}
