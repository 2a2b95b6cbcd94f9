package permission

import "testing"

// TestBackslashAtEnd: a backslash that ends the command line escapes
// nothing, and sh and bash keep it as a "\" of its word; it was dropped,
// so `echo secret >\` (which writes the file "\") and `ls; \` (which
// runs the command "\") were read-only, allowed even in explore mode.
func TestBackslashAtEnd(t *testing.T) {
	for _, c := range []string{"echo secret >\\", "cat .env >\\", "ls; \\", "ls\n\\"} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	// As an argument it is one, as the shell gives it.
	line, err := parseShell("echo a \\")
	if err != nil || len(line.cmds) != 1 || len(line.cmds[0].args) != 3 || line.cmds[0].args[2] != "\\" {
		t.Errorf(`echo a \: %+v, %v; want the arguments echo, a, \`, line.cmds, err)
	}
	if !shellReadOnly("echo a \\") {
		t.Error(`echo a \ is not read-only`)
	}
}
