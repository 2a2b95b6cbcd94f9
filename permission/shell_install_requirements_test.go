package permission

import (
	"path/filepath"
	"testing"
)

// TestInstallOtherRequirements: "pip install -r /srv/other/req.txt"
// installs what a file outside the working directories says, whose
// lines may name any project to build (-e /srv/other, ./x, NAME @
// file://DIR), yet "pip:*" allowed it, where "pip install -e
// /srv/other" asks; so did "uv:*" uv pip install's and uv add's. A
// requirements file is now read as curl -K's file is: outside the
// working directories it asks, inside it stays pip's and uv's.
func TestInstallOtherRequirements(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	req := filepath.Join(other, "req.txt")
	for _, rules := range [][]Rule{shellAllowRules(t, "pip", "pip3", "python3", "uv"),
		shellAllowRules(t, "pip install", "pip3 install", "python3 -m pip install", "uv pip install", "uv add", "uv tool install")} {
		p := Policy{Rules: rules, WorkingDirs: []string{wd}}
		checkLines(t, p, []string{
			"pip install -r requirements.txt",
			"pip install -r requirements/dev.txt",
			"pip install --requirement=requirements.txt",
			"pip install -r requirements.txt -c " + other + "/constraints.txt",
			"python3 -m pip install -r requirements.txt",
			"uv pip install -r requirements.txt",
			"uv pip install -r requirements.txt -c constraints.txt",
			"uv add -r requirements.txt",
			"uv tool install --with-requirements requirements.txt ruff",
		}, []string{
			"pip install -r " + req,
			"pip install -r ../other/req.txt",
			"pip install --requirement=" + req,
			"pip install --requirement " + req,
			"pip install -r requirements.txt -r " + req,
			"pip3 install -Ur " + req,
			"python3 -m pip install -r " + req,
			"uv pip install -r " + req,
			"uv pip install --requirements=" + req,
			"uv add -r " + req,
			"uv tool install --with-requirements " + req + " ruff",
		})
		for _, line := range []string{"pip install -r " + req, "uv pip install -r " + req} {
			if d := Decide(Policy{WorkingDirs: []string{wd}}, shell, cmd(line)); len(d.Suggested) > 0 {
				t.Errorf("%q: suggests %v, want none", line, d.Suggested)
			}
		}
	}
}
