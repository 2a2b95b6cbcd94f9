package permission

import "testing"

// TestUvPipSystemWrites: uv pip install, sync and uninstall with
// --system change the system's Python (with --python, -p, the
// interpreter it names or finds), yet "uv:*" allowed "uv pip install
// --system requests", a write outside the working directories that
// "pip install --prefix /srv/other requests" asks for. The site of such
// an interpreter is now a directory written (one not known here unless
// --python is a path: there); a virtual environment inside, and
// commands that only read, stay uv's.
func TestUvPipSystemWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "uv"), WorkingDirs: dirs}
		checkLines(t, p, []string{
			"uv pip install -r requirements.txt",
			"uv pip install -p .venv/bin/python requests",
			"uv pip sync --python=.venv requirements.txt",
			"uv pip list --system",
			"uv pip freeze --python " + other + "/bin/python",
			"uv pip compile --system requirements.in -o requirements.txt",
		}, []string{
			"uv pip install --system requests",
			"uv pip install requests --system",
			"uv pip sync --system requirements.txt",
			"uv pip uninstall --system requests",
			"uv pip install -p " + other + "/bin/python requests",
			"uv pip install --python=" + other + "/.venv requests",
			"uv pip install --python 3.12 requests",
		})
	}
}
