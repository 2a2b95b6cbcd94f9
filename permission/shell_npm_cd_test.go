package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestNpmAfterCdOtherProject: "npm test --prefix /srv/other" asks, as
// it runs another project's scripts, but "cd /srv/other && npm test"
// runs the same scripts, and "cd:*" with "npm test:*" allowed it (so
// did pnpm and yarn after a cd). A package manager given no project
// directory runs the current directory's scripts, which is now where
// the cds before it on the line may have led: outside the working
// directories (or not known here: cd $X), the line asks as with
// --prefix.
func TestNpmAfterCdOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := shellAllowRules(t, "npm test", "npm run", "npm install", "pnpm test", "yarn test", "cd", "pushd", "sh")
	tools := shellAllowRules(t, "npm", "pnpm", "yarn", "cd", "pushd", "sh")
	for _, rules := range [][]Rule{scripts, tools} {
		p := Policy{Rules: rules, WorkingDirs: []string{wd}}
		for _, line := range []string{
			"cd /srv/other && npm test",
			"cd /srv/other; npm run build",
			"cd /srv/other && npm install",
			"cd ../other && pnpm test",
			"cd $X && yarn test",
			"pushd /srv/other && npm test",
			"cd /srv/other && npm test --prefix .",
			"sh -c 'cd /srv/other && npm test'",
			"cd /srv/other && sh -c 'npm test'",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
				t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
			}
		}
		for _, line := range []string{
			"npm test",
			"cd sub && npm test",
			"cd sub/deep && npm run build",
			"npm test && cd /srv/other",
			"cd " + wd + "/sub && npm test",
			"cd /srv/other && npm test --prefix " + wd,
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
			}
		}
	}
}
