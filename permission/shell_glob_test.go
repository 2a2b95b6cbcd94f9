package permission

import "testing"

// TestPatternsAreNotCheckedWords: the shell replaces a word with "*", "?"
// or "[…]" by the names of the files it matches, which may be any number
// and may read as flags. A command whose arguments are checked was
// checked on the pattern: `uniq *`, one operand to the check, is `uniq a
// b` in a directory of two files, which overwrites b; `sort *` or `find
// . -name *` with a file named -o… or -delete are the same. They were
// read-only and allowed without asking, even in explore mode.
func TestPatternsAreNotCheckedWords(t *testing.T) {
	for _, c := range []string{"uniq *", "uniq a?", "uniq [ab]", "sort *", "find . -name *.go", "date -[s] x", "rg x *"} {
		if shellReadOnly(c) {
			t.Errorf("%q is read as read-only", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior == Allow {
			t.Errorf("explore mode, %q: %s (%s), want it not allowed", c, d.Behavior, d.Reason)
		}
	}
	// A quoted pattern is a plain word, "[" alone is no pattern, and a
	// command whose arguments are not checked may take any.
	for _, c := range []string{"uniq '*'", "find . -name '*.go'", "find . -name \\*.go", "[ -f x ]", "test a = ]", "ls *.go", "cat a?", "grep -r x [ab]*"} {
		if !shellReadOnly(c) {
			t.Errorf("%q is not read-only", c)
		}
	}
}
