package permission

import "testing"

// TestUvPipWritesAsPip: uv pip install takes pip's --target and --prefix
// (and uv pip is read as pip for deny rules), yet "uv:*" allowed "uv pip
// install --target /srv/other requests", where "pip install --target
// /srv/other requests" asks. uv pip's files written are now read as
// pip's; inside they stay uv's.
func TestUvPipWritesAsPip(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "uv"), WorkingDirs: dirs}
		for _, line := range []string{
			"uv pip install --target " + other + " requests",
			"uv pip install --prefix=" + other + " -r requirements.txt",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"uv pip install -r requirements.txt",
			"uv pip install --target vendor requests",
			"uv pip compile requirements.in -o requirements.txt",
			"uv sync",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
