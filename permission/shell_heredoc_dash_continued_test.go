package permission

import "testing"

// TestHereDocDashAcrossContinuedLine: the shell removes a backslash and a
// newline before it reads an operator, so "<<\<newline>-EOF" is <<- with
// the delimiter EOF (leading tabs stripped), while the command line read
// << with the delimiter -EOF, which no line matched: the body went on to
// the end and hid the commands after the real delimiter, so
// `cat <<\<newline>-EOF`, `hello`, `<tab>EOF`, `touch x` (dash and bash
// run touch) was read-only and allowed without asking even in explore
// mode.
func TestHereDocDashAcrossContinuedLine(t *testing.T) {
	for _, c := range []string{
		"cat <<\\\n-EOF\nhello\n\tEOF\ntouch x\n",
		"cat <<\\\n\\\n-EOF\nhello\nEOF\ntouch x",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
		if d := Decide(Policy{Mode: ModeExplore}, shell, cmd(c)); d.Behavior != Deny {
			t.Errorf("explore %q: %s (%s), want deny", c, d.Behavior, d.Reason)
		}
	}
	if c := "cat <<\\\n-EOF\nhello\n\tEOF\nls\n"; !shellReadOnly(c) {
		t.Errorf("shellReadOnly(%q) = false, want true", c)
	}
}

// TestHereDocStripIsPerOperator: "<<-" strips the tabs of its own body
// only: a "<<" after it on the line takes its delimiter as written, so
// "\tB" does not end B's body and touch is in it.
func TestHereDocStripIsPerOperator(t *testing.T) {
	if c := "cat <<-A <<B\n\tA\nx\n\tB\ntouch y\nB\n"; !shellReadOnly(c) {
		t.Errorf("shellReadOnly(%q) = false, want true", c)
	}
}
