package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInstallOtherProject: "pip install /srv/other" (-e too, and
// python3 -m pip's) builds the project outside the working directories,
// running its setup.py and build backend, and installs it where the
// workspace's code imports it, and "npm install /srv/other" makes it a
// dependency of the workspace's, whose code every later npm test
// requires, yet "pip:*" and "npm:*" allowed them, where "cargo add
// --path /srv/other" asks. A path they install a package from is now a
// project directory, as cargo add's --path is; a package by name, a
// requirements file and a path inside stay pip's and npm's.
func TestInstallOtherProject(t *testing.T) {
	wd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	for _, rules := range [][]Rule{shellAllowRules(t, "pip", "pip3", "python3", "npm"),
		shellAllowRules(t, "pip install", "pip3 install", "python3 -m pip install", "npm install", "npm i", "npm add")} {
		p := Policy{Rules: rules, WorkingDirs: []string{wd}}
		checkLines(t, p, []string{
			"pip install requests",
			"pip install -e .",
			"pip install -e ./sub",
			"pip install ./sub",
			"pip install -r requirements.txt",
			"pip install -r requirements.txt -c constraints.txt",
			"pip install -t vendor requests",
			"pip install --prefix .venv requests",
			"pip install 'foo @ git+https://example.com/foo'",
			"python3 -m pip install -e .",
			"npm install",
			"npm install lodash",
			"npm install lodash@~4.17.0 react@^18",
			"npm install @types/node@latest",
			"npm install --save-dev @types/node",
			"npm i -D typescript",
			"npm install ./sub",
			"npm install file:./sub",
			"npm install --prefix sub lodash",
		}, []string{
			"pip install " + other,
			"pip install -e " + other,
			"pip install --editable=" + other,
			"pip install -e ../other",
			"pip3 install ~/other",
			"pip install requests " + other,
			"pip install 'foo @ file://" + other + "'",
			"python3 -m pip install -e " + other,
			"npm install " + other,
			"npm install ../other",
			"npm i file:../other",
			"npm install foo@file:" + other,
			"npm add --save-dev " + other,
			"npm install lodash " + other,
		})
		for _, line := range []string{"pip install -e " + other, "npm install " + other} {
			if d := Decide(Policy{WorkingDirs: []string{wd}}, shell, cmd(line)); len(d.Suggested) > 0 {
				t.Errorf("%q: suggests %v, want none", line, d.Suggested)
			}
		}
	}
}
