package permission

import "testing"

// TestAmpersandGreaterInDash: bash reads "&>" as a redirection of both
// outputs, but dash (the default /bin/sh) has no such operator: "&" ends
// the command (run in the background) and ">" starts the next one, so
// `ls &>/dev/null touch x` runs touch with dash, while the line was read
// as ls with two arguments, read-only and allowed without asking even in
// explore mode. Both readings count.
func TestAmpersandGreaterInDash(t *testing.T) {
	for _, c := range []string{
		"ls &>/dev/null touch x",
		"cat f &>>/dev/null rm -f g",
		"echo hi &> /dev/null sh -c 'touch x'",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	// A deny rule sees the command dash runs.
	deny := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:rm:*", Deny)}}
	if d := Decide(deny, shell, cmd("cat f &>/dev/null rm -rf g")); d.Behavior != Deny {
		t.Errorf("deny rm:*, cat f &>/dev/null rm -rf g: %s (%s), want deny", d.Behavior, d.Reason)
	}
	for _, c := range []string{
		"ls &>/dev/null",
		"grep -q x f &>/dev/null && echo found",
		"echo '&>' x",
		`echo "a&>b"`,
	} {
		if !shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = false, want true", c)
		}
	}
}
