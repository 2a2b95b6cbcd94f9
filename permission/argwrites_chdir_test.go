package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrapperChdir: env -C DIR, sudo -D DIR and find's -execdir run a
// command in another directory, as cd does, but a relative path the
// command writes was checked under the shell's alone: "env:*" and
// "sort:*" allowed "env -C /srv sort -o x in", writing /srv/x, and "env
// -C .git/hooks tee pre-commit" was no safety ask whatever the rules.
// The command such a wrapper runs is now checked in that directory too.
func TestWrapperChdir(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "env", "sudo", "find", "sort", "tee", "touch", "rm", "ls", "bash")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"env -C " + other + " sort -o x in.txt",
		"env -C" + other + " sort -o x in.txt",
		"env --chdir=" + other + " sort -o x in.txt",
		"env --chdir " + other + " tee x",
		"env --ch " + other + " tee x",
		"env -iC " + other + " tee x",
		"env -C " + other + " X=1 touch x",
		"env -C " + other + " bash -c 'ls > x'",
		"sudo -D " + other + " touch x",
		"/usr/bin/env -C " + other + " touch x",
		"sudo --chdir=" + other + " rm -rf build",
		"sudo -u nobody -D " + other + " touch x",
		"sudo env -C " + other + " touch x",
		"env -C $DIR touch x",
		"find " + other + " -name '*.txt' -execdir sort -o sorted {} \\;",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
		if len(d.Suggested) > 0 {
			t.Errorf("%q: suggested %v, want none", line, d.Suggested)
		}
	}
	for _, line := range []string{
		"env -C sub sort -o x in.txt",
		"env -C " + wd + "/sub touch x",
		"env -C " + other + " ls > x", // the shell opens x, here
		"env -C " + other + " ls",
		"sudo -D sub touch x",
		"env touch x",
		"find . -name '*.txt' -execdir sort -o sorted {} \\;",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"env -C /var touch lib",
		"sudo -D /var rm -rf lib",
		"env --chdir=/var sort -o lib x",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}

// TestSudoChroot: sudo -R DIR (--chroot) runs its command with DIR for
// its root, so the files it writes are not where the line names them,
// but "sudo:*" and "touch:*" allowed "sudo -R /srv touch x", writing
// under /srv; a relative path such a command writes is now in a
// directory not known here, outside the working directories.
func TestSudoChroot(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "sudo", "sort", "touch", "tee", "ls")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"sudo -R " + other + " touch x",
		"sudo -R" + other + " touch x",
		"sudo --chroot=" + other + " sort -o x in.txt",
		"sudo --chroot " + other + " tee x",
		"sudo -u root -R " + other + " touch x",
		"sudo -R . touch x",
	} {
		d := Decide(p, shell, cmd(line))
		if d.Behavior != Ask || d.Safety {
			t.Errorf("%q: %s (%s, safety %v), want ask (not a safety ask)", line, d.Behavior, d.Reason, d.Safety)
		}
	}
	for _, line := range []string{
		"sudo touch x",
		"sudo -u nobody sort -o x in.txt",
		"sudo -R " + other + " ls",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
}
