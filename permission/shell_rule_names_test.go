package permission

import "testing"

// denyRulesSee checks that a deny rule on rm and an ask rule on git push
// match each line of rm and of git push (in bypass mode the rules are
// all that stands), and that the other lines still run.
func denyRulesSee(t *testing.T, rm, push, run []string) {
	t.Helper()
	p := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny), rule(t, "execute_shell_command:git push:*", Ask)}}
	for _, c := range rm {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range push {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Ask {
			t.Errorf("ask git push:*, %q: %s (%s), want ask", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range run {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}

// TestDenyRuleSeesSubshells: a subshell's "(" written as a word of its
// own ("( rm x )", and dash's "(( rm x ))", two subshells) was read as a
// command named "" running "rm x )", which no rule matched: bash and
// dash run rm.
func TestDenyRuleSeesSubshells(t *testing.T) {
	denyRulesSee(t, []string{
		"( rm -rf x )",
		"( ( rm -rf x ) )",
		"(( rm -rf x ))",
		"( { rm -rf x; } )",
		"if ( rm -rf x ); then :; fi",
		"! ( rm -rf x )",
		"time ( rm -rf x )",
		"f() ( rm -rf x ); f",
		"f() { ( rm -rf x ); }; f",
	}, []string{
		"( git push )",
		"ls && ( git push origin main )",
	}, []string{
		"( ls )",
		"( cd x && make )",
	})
}

// TestAllowRulesStillAllowNames: the readings above leave what allow
// rules allow as it was.
func TestAllowRulesStillAllowNames(t *testing.T) {
	p := Policy{Rules: []Rule{rule(t, "execute_shell_command:git status:*", Allow), rule(t, "execute_shell_command:go test:*", Allow),
		rule(t, "execute_shell_command:make:*", Allow), rule(t, "execute_shell_command:ls:*", Allow)}}
	for _, c := range []string{"git status", "ls -la", "ls *.go", "go test ./...", "go test -run 'Test*' ./..."} {
		if d := Decide(p, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"( rm x )", "/bin/r[m] x", "l[s] x"} {
		if d := Decide(p, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("%q: %s (%s), want an ask", c, d.Behavior, d.Reason)
		}
	}
}
