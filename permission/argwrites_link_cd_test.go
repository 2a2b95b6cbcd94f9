package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteAfterCdIntoLinkMadeOnLine: "ln -s /srv/other/a x && cd x &&
// ls > ../f" was allowed by "ln:*", "cd:*" and "ls:*" though it writes
// /srv/other/f: after cd x the shell's current directory is the link's
// target, and "../f" leads from there, not from x's parent; a link the
// line makes does not exist yet to be resolved, and the path was
// cleaned ("x/../f" to "f") before the links were looked at. A path
// through such a link keeps its ".." for that look.
func TestWriteAfterCdIntoLinkMadeOnLine(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(other, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "ln", "cd", "ls", "echo"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"ln -s " + other + "/a x && cd x && ls > ../f",
		"ln -s " + other + "/a x && cd ./x && ls > ../f",
		"ln -s " + other + "/a x && echo hi > x/../f",
		// The shell's cd .. is back in x's parent, or, when that
		// fails, in the target's: asked, as with a link that exists.
		"ln -s " + other + "/a x && cd x && cd .. && ls > f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"mkdir -p x && cd x && ls > ../f",
		"ln -s sub x && cd x && ls > ../f",
	} {
		if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if d := Decide(Policy{Rules: shellAllowRules(t, "ln", "cd", "ls", "mkdir"), WorkingDirs: []string{wd}}, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
