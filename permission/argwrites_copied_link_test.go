package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteThroughCopiedLink: cp -a (-d, -P, -r: without -L or -H)
// copies a symbolic link as a link, so with a link "out" in the
// workspace leading to /srv/other, "cp -a out o && echo x > o/f" wrote
// /srv/other/f with "cp:*" and "echo:*" allowed, the copy not existing
// yet to be resolved where the write was checked. A path written
// through the copy of a source that is a symbolic link is now also
// checked where the source leads.
func TestWriteThroughCopiedLink(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	for _, d := range []string{"sub", "src"} {
		if err := os.Mkdir(filepath.Join(wd, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(other, filepath.Join(wd, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(wd, "sub", "in")); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "cp", "echo", "cd"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cp -a out o && echo x > o/f",
		"cp -P out o; echo x > o/f",
		"cp -d out o && echo x > o/f",
		"cp -r out o && echo x > o/f",
		"cp --no-dereference out o && echo x > o/f",
		"cp -a out sub && echo x > sub/out/f",
		"cp -a -t sub out && echo x > sub/out/f",
		"cp -a " + wd + "/out o && echo x > o/f",
		"cd sub && cp -a in o && echo x > o/f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"cp -aL out o && echo x > o/f",
		"cp -a src o && echo x > o/f",
		"cp -a " + other + " o && echo x > o/f",
		"cp -r src/ backup/ && echo x > backup/f",
		"cp -a out o && echo x > f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}

// TestWriteThroughCopiedRelativeLink: cp -a copies a link's text, so a
// relative link leads from where its copy is: with "sub/deep/up" leading
// to "../.." (the workspace), "cp -a sub/deep/up up && echo x > up/f"
// writes f two directories above the workspace, but it was checked
// where the source leads (the workspace) and allowed by "cp:*" and
// "echo:*". A relative link's copy is now followed from the copy's
// directory, as for a link made on the line.
func TestWriteThroughCopiedRelativeLink(t *testing.T) {
	root := t.TempDir()
	wd := filepath.Join(root, "a", "wd")
	if err := os.MkdirAll(filepath.Join(wd, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(wd, "sub", "deep", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(wd, "sub", "back")); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "cp", "echo", "cd"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cp -a sub/deep/up up && echo x > up/f",
		"cp -P sub/back b && echo x > b/f",
		"cp -a sub/deep/up . && echo x > up/f",
		"cd sub && cp -a deep/up u && echo x > u/f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"cp -a sub/deep/up sub/deep/u && echo x > sub/deep/u/f",
		"cp -a sub/back sub/b && echo x > sub/b/f",
		"cp -aL sub/deep/up up && echo x > up/f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
