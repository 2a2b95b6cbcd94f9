package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCmakeChdirRunsThere: cmake -E chdir DIR CMD runs CMD in DIR, so
// its relative paths are DIR's ("cmake -E chdir /srv/other touch x"
// writes /srv/other/x, "cmake -E chdir /srv/other make" runs that
// directory's Makefile), yet "cmake:*" with "touch:*" (or "make:*")
// allowed them, where "env -C /srv/other touch x" asks. The command
// now runs in DIR as env -C's does; inside it stays the rules'.
func TestCmakeChdirRunsThere(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "build"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "cmake", "touch", "make", "npm", "ls", "sh")
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: rules, WorkingDirs: dirs}
		for _, line := range []string{
			"cmake -E chdir " + other + " touch x",
			"cmake -E chdir ../other touch x",
			"cmake -E chdir " + other + " make",
			"cmake -E chdir " + other + " npm test",
			"cmake -E chdir " + other + " sh -c 'ls > f'",
			"cmake -E chdir $DIR touch x",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
				t.Errorf("%v %q: %s (%s), want ask", dirs, line, d.Behavior, d.Reason)
			}
		}
		for _, line := range []string{
			"cmake -E chdir build touch x",
			"cmake -E chdir build make",
			"cmake -E chdir build ls " + other,
			"cmake -E chdir " + other + " ls",
			"cmake -E env touch x",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
