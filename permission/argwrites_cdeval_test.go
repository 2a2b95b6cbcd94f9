package permission

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWritesAfterCdAndScriptFunction: a function named cd defined by a
// script the shell runs itself (eval, mapfile's -C callback) has the
// parentheses of its definition inside a quoted word, so the line did
// not read as grouped, and "eval 'cd() { :; }'; cd sub && ls > ../f"
// was checked in sub alone while it wrote the working directory's
// parent. A line whose scripts define a function keeps the directory
// before a cd too.
func TestWritesAfterCdAndScriptFunction(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "cd", "ls", "eval", "mapfile", "cd()", ":", "}"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"eval 'cd() { :; }'; cd sub && ls > ../f",
		"eval 'cd () { :; }'; cd sub && ls > ../f",
		"eval \"cd() { :; }\" && cd sub && ls > ../f",
		"mapfile -t -C 'cd() { :; }' -c 1 x <<< y; cd sub && ls > ../f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
		inside := strings.ReplaceAll(line, "../f", "f")
		if d := Decide(p, shell, cmd(inside)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", inside, d.Behavior, d.Reason)
		}
	}
}
