package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNpxAfterCdOtherProject: npx runs the command of the project it
// runs in, node_modules/.bin/eslint, before any it would fetch, so
// "cd /srv/other && npx eslint ." runs that project's eslint (and its
// configuration's plugins), yet "cd:*" with "npx:*" and "eslint:*"
// allowed it, though "cd /srv/other && npm test" asks. npx's project is
// now the current directory (or --prefix DIR's), where the cds before
// it may have led, as npm's is: outside the working directories the
// line asks.
func TestNpxAfterCdOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rules := range [][]Rule{shellAllowRules(t, "npx", "bunx", "eslint", "tsc", "cd", "pushd", "sh"), shellAllowRules(t, "npx eslint", "npx tsc", "bunx tsc", "eslint", "cd")} {
		for _, dirs := range [][]string{{wd}, nil} {
			p := Policy{Rules: rules, WorkingDirs: dirs}
			for _, line := range []string{
				"cd /srv/other && npx eslint .",
				"cd /srv/other; npx tsc --noEmit",
				"cd ../other && npx eslint .",
				"cd $X && npx tsc",
				"npx --prefix /srv/other eslint .",
				"npx --prefix=/srv/other tsc",
				"cd /srv/other && bunx tsc",
			} {
				if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
					t.Errorf("%v %q: %s (%s), want ask", dirs, line, d.Behavior, d.Reason)
				}
				if d := Decide(Policy{WorkingDirs: dirs}, shell, cmd(line)); len(d.Suggested) > 0 {
					t.Errorf("%v %q: suggests %v, want none", dirs, line, d.Suggested)
				}
			}
			for _, line := range []string{
				"npx eslint .",
				"npx tsc --noEmit",
				"cd sub && npx eslint .",
				"cd sub/deep && npx tsc",
				"npx eslint . && cd /srv/other",
				"bunx tsc",
			} {
				if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
					t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
				}
			}
		}
	}
}
