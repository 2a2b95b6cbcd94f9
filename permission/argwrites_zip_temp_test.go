package permission

import "testing"

// TestZipTempPathWrites: zip -b DIR (--temp-path) writes its temporary
// archive in DIR before it moves it over the archive, yet "zip:*"
// allowed "zip -b /srv/other a.zip f", a write there that a redirection
// asks for, as -b's directory was read as a value skipped. It is now a
// directory written; inside it stays zip's.
func TestZipTempPathWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "zip"), WorkingDirs: dirs}
		for _, line := range []string{
			"zip -b " + other + " a.zip f",
			"zip -r -b " + other + " dist.zip dist",
			"zip --temp-path " + other + " a.zip f",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"zip -b tmp a.zip f",
			"zip --temp-path build/tmp -r dist.zip dist",
			"zip -b . a.zip " + other + "/f",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
