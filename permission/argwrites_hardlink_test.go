package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHardLinkSourceIsWritten: a hard link is the file it links, so
// "ln /srv/other/app.conf app.conf" (or cp -l, cp --link) gives the
// file outside a name inside, and a later "echo x > app.conf", on the
// line or in a later call, writes the file outside through it, where
// no symbolic link shows that it leads there. "ln:*" allowed making
// such a link; the files a hard link is made to are now written, as
// its destination is: outside, the line asks. A symbolic link's target
// is not (a later write through it is checked with links resolved).
func TestHardLinkSourceIsWritten(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "ln", "cp", "echo"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"ln " + other + "/app.conf app.conf",
		"ln " + other + "/app.conf",
		"ln -f " + other + "/a " + other + "/b sub",
		"ln -t sub " + other + "/a",
		"ln --target-directory=sub " + other + "/a",
		"ln -P " + other + "/a b",
		"ln " + other + "/a b && echo x > b",
		"cp -l " + other + "/a b",
		"cp -al " + other + " tree",
		"cp --link " + other + "/a b",
		"cp --li " + other + "/a b",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"ln a.txt b.txt",
		"ln sub/a.txt",
		"ln -s " + other + "/a.txt a-link",
		"ln -sf ../shared/config.yaml config.yaml",
		"ln --symbolic " + other + " o",
		"cp " + other + "/a.txt b.txt",
		"cp -s " + other + "/a.txt b.txt",
		"cp -l a.txt b.txt",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
