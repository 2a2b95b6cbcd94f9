package permission

import (
	"errors"
	"strings"
	"testing"
)

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

// TestDeepSubstitutions: substitutions nested deeper than maxNesting are
// not read (the line is unparsable: a safety ask), so reading a line
// stays linear in its length; nested quoted substitutions were each read
// again at every level.
func TestDeepSubstitutions(t *testing.T) {
	const n = 20000
	for _, line := range []string{
		"echo " + strings.Repeat(`"$(`, n) + "x" + strings.Repeat(`)"`, n),
		"echo " + strings.Repeat(`$(`, n) + "x" + strings.Repeat(`)`, n),
	} {
		if _, err := parseShell(line); !errors.Is(err, errTooDeep) {
			t.Errorf("%d nested substitutions: %v, want %v", n, err, errTooDeep)
		}
		if d := Decide(Policy{}, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%d nested substitutions: %s (%s), want a safety ask", n, d.Behavior, d.Reason)
		}
	}
	line := "echo " + strings.Repeat(`"$(`, maxNesting) + "rm -rf x" + strings.Repeat(`)"`, maxNesting)
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	if d := Decide(deny, shell, cmd(line)); d.Behavior != Deny {
		t.Errorf("deny rm:*, rm in %d nested substitutions: %s (%s)", maxNesting, d.Behavior, d.Reason)
	}
}
