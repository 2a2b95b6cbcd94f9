package permission

import "testing"

// TestEverydayExcludePatterns: the word after rsync's and tar's
// --exclude and --include, and after find's -path, -name and the like,
// is a pattern the command matches names against, not a file it
// touches, so ".git" there is no write inside a .git directory; as
// --exclude=.git already was not.
func TestEverydayExcludePatterns(t *testing.T) {
	wd := t.TempDir()
	p := Policy{Rules: shellAllowRules(t, "rsync", "tar", "find"), WorkingDirs: []string{wd}}
	for _, line := range []string{
		"rsync -av --exclude .git ./ backup/",
		"rsync -a --exclude '.git/' --include '.github/' src/ dst/",
		"tar --exclude .git -czf src.tgz .",
		"tar -czf src.tgz --exclude .git --exclude node_modules .",
		"find . -path ./.git -prune -o -name '*.orig' -print -delete",
		"find . -not -path './.git/*' -name '*.tmp' -delete",
		"find . -iname .vscode -prune -o -type f -name '*.bak' -delete",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	for _, line := range []string{
		"rsync -a --exclude x src/ .git/hooks/",
		"rsync -a --exclude .git src/ .git/",
		"tar -xzf x.tgz --exclude .git -C .git/hooks",
		"tar --exclude .git -czf .git/x.tgz .",
		"find .git -path x -delete",
		"find . -path ./.git -prune -o -exec cp {} .git/hooks/ ';'",
		"rsync -a --exclude .git ./ ~/.ssh/",
		"find . -name x -fprint .git/hooks/pre-commit",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior == Allow || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
