package permission

import "testing"

// TestZipUnzipCommandRuns: zip -T tests the archive it wrote with the
// command of -TT (--unzip-command), which it runs by the shell with the
// archive's name, but zip's options read -TT's command as zip's first
// operand, its archive: "zip:*" allowed "zip -T -TT 'rm -rf x' a.zip
// f", not denied by "rm:*", and "zip -T -TT 'unzip -tqq' /srv/other/a.zip
// f", which writes that archive. The command is now run, as tar's
// --to-command is, and the archive is the operand after it.
func TestZipUnzipCommandRuns(t *testing.T) {
	denyRulesSee(t, []string{
		"zip -T -TT 'rm -rf x' a.zip f",
		"zip -T --unzip-command 'rm -rf x' a.zip f",
		"zip -T --unzip-command='rm -rf x' a.zip f",
	}, nil, []string{"zip -T -TT 'unzip -tqq' a.zip f", "zip -r a.zip src"})
	wd := t.TempDir()
	other := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "zip", "unzip"), WorkingDirs: []string{wd}}
	line := "zip -T -TT 'unzip -tqq' " + other + "/a.zip f"
	if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
		t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
	}
	line = "zip -T -TT 'unzip -tqq' a.zip " + other + "/f"
	if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
		t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
	}
}
