package permission

import (
	"path/filepath"
	"testing"
)

// TestUvSyncCompileOtherProject: "uv pip sync
// /srv/other/requirements.txt" installs what a file outside the working
// directories names, whose lines may name any project to build (-e
// /srv/other), and "uv pip compile /srv/other/pyproject.toml" resolves
// that project's dependencies, building its metadata with its build
// backend (setup.py, dynamic dependencies) unless they are static, yet
// "uv:*" allowed both, where "uv pip install -r
// /srv/other/requirements.txt" asks. Their files are now read as uv pip
// install -r's are; files inside stay uv's.
func TestUvSyncCompileOtherProject(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, rules := range [][]Rule{shellAllowRules(t, "uv"), shellAllowRules(t, "uv pip sync", "uv pip compile")} {
		for _, dirs := range [][]string{{wd}, nil} {
			p := Policy{Rules: rules, WorkingDirs: dirs}
			checkLines(t, p, []string{
				"uv pip sync requirements.txt",
				"uv pip sync --python-version 3.12 requirements.txt",
				"uv pip compile requirements.in",
				"uv pip compile pyproject.toml -o requirements.txt",
				"uv pip compile requirements.in -c " + other + "/constraints.txt",
			}, []string{
				"uv pip sync " + filepath.Join(other, "requirements.txt"),
				"uv pip sync ../other/requirements.txt",
				"uv pip sync requirements.txt " + filepath.Join(other, "requirements.txt"),
				"uv pip compile " + filepath.Join(other, "pyproject.toml"),
				"uv pip compile " + filepath.Join(other, "requirements.in") + " -o requirements.txt",
				"uv pip compile -q " + filepath.Join(other, "setup.py"),
			})
		}
	}
}
