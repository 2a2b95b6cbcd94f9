package permission

import "testing"

// TestDenyRuleSeesDefinedCommands: a deny (or ask) rule on a command
// matches it in the body of a function defined on the line, in a case
// clause, behind coproc, as a trap's or an alias's command, and as a
// busybox applet: the shell runs each. In bypass mode the rules are all
// that stands.
func TestDenyRuleSeesDefinedCommands(t *testing.T) {
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	for _, c := range []string{
		"f(){ rm -rf x; }; f",
		"f() { rm -rf x; }; f",
		"f () { rm -rf x; }; f",
		"f ( ) { rm -rf x; }; f",
		"f() (rm -rf x); f",
		"function f { rm -rf x; }; f",
		"function f() { rm -rf x; }; f",
		"case a in a) rm -rf x;; esac",
		"case a in a ) rm -rf x;; esac",
		"case a in (a) rm -rf x;; esac",
		"case a in b) ls;; a) rm -rf x;; esac",
		"case a in b) ls;; a | c ) rm -rf x;; esac",
		"coproc rm -rf x",
		"coproc f { rm -rf x; }",
		"trap 'rm -rf x' EXIT",
		"trap -- 'rm -rf x' EXIT",
		"alias r='rm -rf x'",
		"busybox rm -rf x",
		"busybox sh -c 'rm -rf x'",
	} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("deny rm:*, %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{"f() { ls; }; f", "case a in a) ls;; esac", "trap - EXIT", "alias ll='ls -l'"} {
		if d := Decide(deny, shell, cmd(c)); d.Behavior != Allow {
			t.Errorf("deny rm:*, %q: %s (%s), want allow", c, d.Behavior, d.Reason)
		}
	}
}
