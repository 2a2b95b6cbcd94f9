package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPnpmYarnAddOtherProject: "pnpm add /srv/other" (../x, file:DIR,
// link:DIR, pnpm install's too) and "yarn add ../x" (file:DIR,
// link:DIR, portal:DIR) make the project outside the working
// directories a dependency of the workspace's, whose code every later
// test requires and whose install scripts pnpm and yarn may run, yet
// "pnpm:*" and "yarn:*" allowed them, where "npm install /srv/other"
// asks. A path they add a package from is now a project directory, as
// npm install's is; a package by name and a path inside stay theirs.
func TestPnpmYarnAddOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, rules := range [][]Rule{shellAllowRules(t, "pnpm", "yarn"),
		shellAllowRules(t, "pnpm add", "pnpm install", "pnpm i", "pnpm link", "yarn add", "yarn link")} {
		p := Policy{Rules: rules, WorkingDirs: []string{wd}}
		checkLines(t, p, []string{
			"pnpm add lodash",
			"pnpm add -D typescript@^5",
			"pnpm add @types/node@latest",
			"pnpm add ./sub",
			"pnpm add link:./sub",
			"pnpm install",
			"pnpm install file:./sub",
			"yarn add react",
			"yarn add -D react@~18.2.0",
			"yarn add file:./sub",
			"yarn add link:./sub",
		}, []string{
			"pnpm add ../x",
			"pnpm add " + other,
			"pnpm add -D " + other,
			"pnpm install file:" + other,
			"pnpm i file:" + other,
			"pnpm add foo@file:" + other,
			"pnpm add link:" + other,
			"pnpm add lodash " + other,
			"pnpm link " + other,
			"yarn add ../x",
			"yarn add -D ../x",
			"yarn add file:" + other,
			"yarn add link:" + other,
			"yarn add foo@portal:" + other,
			"yarn link " + other,
		})
		for _, line := range []string{"pnpm add " + other, "yarn add link:" + other} {
			if d := Decide(Policy{WorkingDirs: []string{wd}}, shell, cmd(line)); len(d.Suggested) > 0 {
				t.Errorf("%q: suggests %v, want none", line, d.Suggested)
			}
		}
	}
}
