package permission

import "testing"

// TestPipInstallUserWritesHome: pip install --user installs into the
// user's site (~/.local: its packages, and the scripts of ~/.local/bin
// the user's shell runs), yet "pip:*" allowed it, where "pip install
// --prefix /srv/other x" asks; it is now a directory written, outside
// the working directories. "pip list --user" only reads.
func TestPipInstallUserWritesHome(t *testing.T) {
	wd := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "pip", "pip3", "pip install"), WorkingDirs: dirs}
		for _, line := range []string{
			"pip install --user requests",
			"pip3 install --user -r requirements.txt",
			"pip install -U --user requests",
			"pip --proxy http://p:1 install --user requests",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
				t.Errorf("%v %q: %s (%s), want ask", dirs, line, d.Behavior, d.Reason)
			}
		}
		for _, line := range []string{
			"pip install requests",
			"pip install -e .",
			"pip list --user",
			"pip freeze --user",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
