package permission

import "testing"

// TestGitMakesDirectories: "git:*" (or "git clone:*", "git worktree:*")
// allowed git making a repository, a work tree or a bundle outside the
// working directories ("git clone URL /srv/x", "git worktree add
// ../feature", "git init /srv/x", "git bundle create /srv/b HEAD"),
// where a redirection there asks; the directory or file they make is
// now a write, and stays the command's inside.
func TestGitMakesDirectories(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "git", "git clone", "git worktree", "git init", "git bundle")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"git clone https://example.com/r.git " + other + "/r",
		"git clone --depth 1 https://example.com/r.git " + other + "/r",
		"git clone -b main --single-branch https://example.com/r.git " + other + "/r",
		"git clone --branch=main https://example.com/r.git " + other,
		"git clone --separate-git-dir=" + other + "/g https://example.com/r.git r",
		"git clone https://example.com/r.git ../r",
		"git worktree add ../feature",
		"git worktree add " + other + "/w main",
		"git worktree add -b feature " + other + "/w",
		"git worktree add --detach " + other + "/w HEAD",
		"git init " + other + "/r",
		"git init -b main " + other,
		"git init --bare " + other + "/r.git",
		"git bundle create " + other + "/b.bundle HEAD",
		"git -C " + other + " clone https://example.com/r.git",
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
		"git clone https://example.com/r.git",
		"git clone --depth 1 https://example.com/r.git vendor/r",
		"git clone " + other + " mirror",
		"git worktree add wt/feature",
		"git worktree add -b feature wt/feature main",
		"git worktree list",
		"git init",
		"git init sub",
		"git bundle create repo.bundle --all",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cd /var && git clone https://example.com/r.git lib",
		"cd /var && git init lib",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
