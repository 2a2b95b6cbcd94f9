package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGitWritesWhereItWorks: git -C DIR (and --git-dir, --work-tree)
// works on another repository, but only files its arguments name were
// writes, so "git:*" allowed "git -C /srv/other reset --hard" and "git
// -C /srv/other commit -am x", and "git --work-tree=/etc checkout ."
// was no safety ask. For a subcommand that is not read-only those
// directories are now written; git -C DIR status, log and the like
// still only read.
func TestGitWritesWhereItWorks(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: []Rule{rule(t, "execute_shell_command:git:*", Allow), rule(t, "execute_shell_command:cd:*", Allow)},
		WorkingDirs: []string{wd}}
	for _, line := range []string{
		"git -C " + other + " reset --hard",
		"git -C " + other + " commit -am x",
		"git -C " + other + " checkout .",
		"git -C ../other pull",
		"git -C sub -C " + other + " clean -fdx",
		"git --git-dir=" + other + "/r.git --work-tree=" + other + " checkout .",
		"git --work-tree " + other + " checkout .",
		"git --git-dir=" + other + "/.git fetch",
		"git --git-dir=" + other + "/.git/ fetch",
		"git --git-dir=$REPO commit -am x",
		"git -C $REPO reset --hard",
		"cd " + other + " && git -C sub stash",
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
		"git -C sub commit -am x",
		"git -C " + wd + "/sub reset --hard",
		"git -C " + other + " status",
		"git -C " + other + " log --oneline -5",
		"git -C " + other + " diff",
		"git commit -am x",
		"git --no-pager log",
		"git --git-dir=.git --work-tree=. commit -am x",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"git --work-tree=/etc checkout .",
		"git --git-dir=x --work-tree=/usr/local checkout -f",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
