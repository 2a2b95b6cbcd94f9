package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWritesAfterCdInLoop: a loop runs its body again from where the
// cds below it led, but each command was checked only where the cds
// above it on the line lead: "for i in 1 2; do :; cd sub && cp x ../f;
// cd /srv; done" copies to /srv/f the second time (/srv/sub), and
// "for i in 1 2; do :; touch f; cd /srv; done" touches /srv/f, both
// unasked; so does a function's body, where it is called. On a line
// with a loop or a function's definition every command is checked
// where any of the line's cds may have led too.
func TestWritesAfterCdInLoop(t *testing.T) {
	wd := t.TempDir()
	out := t.TempDir() // outside, with a sub of its own
	for _, d := range []string{filepath.Join(wd, "sub"), filepath.Join(out, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{Rules: shellAllowRules(t, "cd", "ls", "cp", "touch", ":", "for", "while", "until", "select", "do", "done",
		"function", "f()", "f", "}", "bash"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"for i in 1 2; do :; cd sub && cp x ../f; cd " + out + "; done",
		"while :; do :; cd sub && ls > ../f; cd " + out + "; done",
		"until false; do :; cd sub && ls > ../f; cd " + out + "; done",
		"select x in a; do :; cd sub && ls > ../f; cd " + out + "; done",
		"for i in 1 2; do :; touch f; cd " + out + "; done",
		"for i in 1 2; do :; cd sub && ls > ../f; cd ..; done", // ../sub the second time
		"function f { :; touch x; }; cd " + out + " && f",
		"f() { :; touch x; }; cd " + out + " && f",
		"bash -c 'for i in 1 2; do :; touch f; cd " + out + "; done'",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"for i in 1 2; do :; cd sub && cp x ../f; cd " + wd + "; done",
		"for i in 1 2; do :; touch f; cd sub && touch g && cd ..; done",
		"cd sub && ls > ../f; for i in 1 2; do :; done",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
