package permission

import "testing"

// TestDenyRuleSeesSubstitutions: a deny (or ask) rule on a command
// matches it inside a command or process substitution, and the
// substitution is read as the shell reads it (quotes inside "$(…)" do not
// end the outer string). In bypass mode the rules are all that stands.
func TestDenyRuleSeesSubstitutions(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny), rule(t, "execute_shell_command:git push:*", Ask)}}
	for _, c := range []string{
		"echo $(rm -rf x)",
		"echo \"$(ls; rm -rf x)\"",
		"echo `rm -rf x`",
		"cat <(rm -rf x)",
		"echo $(echo $(rm -rf x))",
		`echo "$(printf '"')" ; rm -rf x ; echo '"'`,
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if d := Decide(deny, shell, cmd("echo $(git push)")); d.Behavior != Ask {
		t.Errorf("ask git push:*, echo $(git push): %s (%s), want ask", d.Behavior, d.Reason)
	}
	for _, c := range []string{"echo rm", "echo $(date)"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}
