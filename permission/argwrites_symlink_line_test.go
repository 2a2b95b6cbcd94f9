package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteThroughLinkMadeOnLine: a symbolic link is resolved where a
// write is checked, but one the line makes does not exist yet then, so
// "ln -s /srv/other out && echo x > out/f" was allowed by "ln:*" and
// "echo:*" though it writes /srv/other/f (and "ln -s ~ h && echo x >>
// h/.bashrc" was no safety ask). A path a command writes through a
// symbolic link that a command before it on the line makes (ln -s, cp
// -s; any of the line's in a loop) is now also checked where the link
// leads.
func TestWriteThroughLinkMadeOnLine(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: shellAllowRules(t, "ln", "cp", "echo", "cd", "tee", "sh", "for", "do", "done"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"ln -s " + other + " out && echo x > out/f",
		"ln -sf " + other + "/f f; echo x > f",
		"ln -s " + other + " out; cp a.txt out/",
		"ln -s " + other + " ./out; echo x > out//f",
		"ln -s " + other + " " + wd + "/out; echo x > out/f",
		"ln -s " + other + " out && echo x > " + wd + "/out/f",
		"ln -s " + other + " sub/out && echo x > sub/out/f",
		"ln -s " + other + " -t sub && echo x > sub/" + filepath.Base(other) + "/f",
		"ln -s ../.. up && echo x > up/f",
		"ln -s " + other + " a && ln -s a/x b && echo x > b/f",
		"ln -s " + other + " out && cd out && echo x > f",
		"cp -s " + other + "/f f && echo x > f",
		"ln -s " + other + " out | tee out/f",
		"sh -c 'ln -s " + other + " out; echo x > out/f'",
		"ln -s " + other + " out; sh -c 'echo x > out/f'",
		"for i in 1 2; do echo x > out/f; ln -s " + other + " out; done",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"ln -s ~ h && echo x >> h/.bashrc",
		"ln -sf / r; echo x > r/etc/passwd",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want a safety ask", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"ln -s " + other + " out && echo x > f",
		"ln -s " + other + "/a.txt a-link && echo done",
		"ln -sf build/app app && echo x > app",
		"ln -s ../sub sub/self && echo x > sub/self/f",
		"echo x > out/f && ln -s " + other + " out",
		"ln -s " + other + " outer && echo x > out/f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
