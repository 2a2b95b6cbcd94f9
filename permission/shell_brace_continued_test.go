package permission

import "testing"

// TestBraceSequenceAcrossContinuedLine: the shell removes a backslash and
// a newline before it reads a word, so -{d.\<newline>.d}elete is the
// sequence expansion -{d..d}elete, "-delete", while the check for brace
// expansions saw no ".." in it: `find e -{d.\<newline>.d}elete` (bash
// runs find -delete) was read-only and allowed without asking even in
// explore mode.
func TestBraceSequenceAcrossContinuedLine(t *testing.T) {
	for _, c := range []string{
		"find e -{d.\\\n.d}elete",
		"find e -{d.\\\n\\\n.d}elete",
		"sort in -{o.\\\n.o} /tmp/x",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if c := "find . -name 'a.\\\n.b'"; !shellReadOnly(c) {
		t.Errorf("shellReadOnly(%q) = false, want true", c)
	}
}
