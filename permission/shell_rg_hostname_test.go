package permission

import "testing"

// TestRipgrepHostnameBinNotReadOnly: ripgrep runs the program named by
// --hostname-bin (to learn the host name for hyperlinks), as --pre runs
// one on every file, so such a line is not read-only: in explore mode it
// ran any program of the machine without asking.
func TestRipgrepHostnameBinNotReadOnly(t *testing.T) {
	for _, c := range []string{
		"rg --hostname-bin=/sbin/reboot --hyperlink-format=default x",
		"rg --hostname-bin /sbin/reboot x",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if c := "rg --hyperlink-format=default -n TODO ."; !shellReadOnly(c) {
		t.Errorf("shellReadOnly(%q) = false, want true", c)
	}
}
