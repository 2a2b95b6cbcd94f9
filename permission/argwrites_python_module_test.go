package permission

import "testing"

// TestPythonModuleWritesAsItsCommand: python -m black (isort, ruff) and
// python -m pip run the same program as black and pip, so they write
// the same files, yet "python:*" allowed "python -m black
// /srv/other/x.py" and "python3 -m pip install --target /srv/other x",
// where "black /srv/other/x.py" with "black:*" asks. A module's files
// written are now read as its command's; inside, and with --check and
// the like, they stay the rule's.
func TestPythonModuleWritesAsItsCommand(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "python", "python3", "python3.12"), WorkingDirs: dirs}
		for _, line := range []string{
			"python -m black " + other + "/x.py",
			"python3 -m black -q " + other,
			"python -m isort " + other + "/x.py",
			"python -m ruff format " + other,
			"python -m ruff check --fix " + other + "/x.py",
			"python3 -m pip install --target " + other + " requests",
			"python3.12 -m pip install --prefix=" + other + " requests",
			"python -m pip install --user requests",
			"python -u -m pip download -d " + other + " requests",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"python -m black .",
			"python -m black --check " + other,
			"python -m isort --diff " + other + "/x.py",
			"python -m ruff check " + other,
			"python -m pip install -r requirements.txt",
			"python3 -m pip install -t vendor requests",
			"python -m pytest -x -q tests/",
			"python -m pytest " + other,
			"python " + other + "/black.py",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
