package permission

import "testing"

// TestZipTempPathWrites: zip -b DIR (--temp-path) writes its temporary
// archive in DIR before it moves it over the archive, yet "zip:*"
// allowed "zip -b /srv/other a.zip f", a write there that a redirection
// asks for, as -b's directory was read as a value skipped. It is now a
// directory written; inside it stays zip's. So it is written glued to
// its option, -bDIR, -rbDIR (not -db, -sb: options of their own) or
// --temp-path=DIR, its name abbreviated as zip takes it, which were
// allowed (and -OFILE, --output-file=FILE).
func TestZipTempPathWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, dirs := range [][]string{{wd}, nil} {
		p := Policy{Rules: shellAllowRules(t, "zip"), WorkingDirs: dirs}
		for _, line := range []string{
			"zip -b " + other + " a.zip f",
			"zip -r -b " + other + " dist.zip dist",
			"zip --temp-path " + other + " a.zip f",
			"zip --temp-path=" + other + " a.zip f",
			"zip --temp-pa=" + other + " a.zip f",
			"zip -b" + other + " a.zip f",
			"zip -rb" + other + " dist.zip dist",
			"zip -rb " + other + " dist.zip dist",
			"zip --output-file=" + other + "/a.zip in.zip",
			"zip -O" + other + "/a.zip in.zip",
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
				t.Errorf("%v %q: %s (%s, safety %v), want ask (not a safety ask)", dirs, line, d.Behavior, d.Reason, d.Safety)
			}
		}
		for _, line := range []string{
			"zip -b tmp a.zip f",
			"zip --temp-path build/tmp -r dist.zip dist",
			"zip -b . a.zip " + other + "/f",
			"zip --temp-path=tmp a.zip f",
			"zip -btmp a.zip f",
			"zip -db -r a.zip " + other,
			"zip -r --display-bytes a.zip " + other,
		} {
			if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
				t.Errorf("%v %q: %s (%s), want allow", dirs, line, d.Behavior, d.Reason)
			}
		}
	}
}
