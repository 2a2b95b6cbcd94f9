package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWritesAfterCdDotNameCDPATH: the shell looks a cd's directory up
// in CDPATH unless it is absolute or starts with "./" or "../" (or is
// "." or ".."), so "cd .x" with CDPATH set may go to $CDPATH/.x; it
// was taken as ./.x, and "export CDPATH=/srv; cd .x && rm -rf
// ../projects" removed /srv/projects unasked. Such a name is one not
// known here, as any other.
func TestWritesAfterCdDotNameCDPATH(t *testing.T) {
	wd := t.TempDir()
	out := t.TempDir()
	if err := os.MkdirAll(filepath.Join(out, ".x"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "cd", "ls", "rm", "export"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"export CDPATH=" + out + "; cd .x && rm -rf ../projects",
		"export CDPATH=" + out + "; cd ..x && ls > ../f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"export CDPATH=" + out + "; cd ./sub && ls > ../f",
		"export CDPATH=" + out + "; cd . && ls > f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
