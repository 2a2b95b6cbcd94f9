package permission

import "testing"

// TestArchiveAbsoluteNamesExtract: tar -P (--absolute-names) extracts
// an archive's members under the names they have, "/" and ".." kept,
// and unzip -: keeps their ".." components, so an archive the model
// made of "/home/u/.bashrc" (tar -cPf x.tar --transform …) wrote there
// with "tar:*" or "unzip:*" allowing "tar -xPf x.tar", where only the
// current directory (or -C's, -d's) was checked. Such an extraction now
// writes a file not known here, outside the working directories: the
// line asks.
func TestArchiveAbsoluteNamesExtract(t *testing.T) {
	p := Policy{Rules: shellAllowRules(t, "tar", "unzip"), WorkingDirs: []string{t.TempDir()}}
	for _, line := range []string{
		"tar -xPf x.tar",
		"tar xPf x.tar",
		"tar -xf x.tar -P",
		"tar --absolute-names -xf x.tar",
		"tar --abs -xf x.tar",
		"tar -xzPf x.tgz -C sub",
		"unzip -: x.zip",
		"unzip -o -: x.zip -d sub",
		"unzip -:o x.zip",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask {
			t.Errorf("%q: %s (%s), want ask", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"tar -xf x.tar",
		"tar -xzf x.tgz -C sub",
		"tar -cPf x.tar sub",
		"tar -tPf x.tar",
		"unzip x.zip",
		"unzip -o x.zip -d sub",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
