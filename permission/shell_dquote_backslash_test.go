package permission

import "testing"

// TestDoubleQuotedBackslashKept: inside double quotes a backslash escapes
// only $, `, ", \ and a newline, and stays before any other character,
// but it was removed before every one, so the delimiter of "cat
// <<\"EO\\F\"" was read as EOF, where the shell's is EO\F: the line
// "EO\F" did not end the body, which hid the commands after it, and
// "cat <<\"EO\\F\"", "EO\F", "echo hi > ../out.txt" was read-only and
// allowed by "cat:*" though the shell runs the echo, which writes
// ../out.txt. The backslash is now kept where the shell keeps it.
func TestDoubleQuotedBackslashKept(t *testing.T) {
	p := Policy{Rules: shellAllowRules(t, "cat"), WorkingDirs: []string{t.TempDir()}}
	for _, c := range []string{
		"cat <<\"EO\\F\"\nEO\\F\necho hi > ../out.txt",
		"cat <<\"\\EOF\"\n\\EOF\necho hi > ../out.txt\nEOF",
	} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
		if d := Decide(p, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("%q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	for _, c := range []string{
		"cat <<\"EO\\$F\"\nEO$F\nls",
		"cat <<\"EO\\\\F\"\nEO\\F\nls",
		"cat <<\"EO\\F\"\nEO\\F\nls",
	} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
	}
	l, err := parseShell(`grep -E "a\.b\"c\\d\$e" f`)
	if err != nil || len(l.cmds) != 1 || len(l.cmds[0].args) != 4 || l.cmds[0].args[2] != `a\.b"c\d$e` {
		t.Errorf("grep's pattern: %v, %v; want a\\.b\"c\\d$e", l.cmds, err)
	}
}
