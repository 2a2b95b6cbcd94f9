package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// argWriteRules allow, by name, the commands that write files their
// arguments name.
func argWriteRules(t *testing.T) []Rule {
	rules := shellAllowRules(t, "find", "sort", "git log", "git diff", "git show", "git format-patch", "tee",
		"cp", "mv", "install", "ln", "dd", "curl", "wget", "make", "go test", "sudo")
	return rules
}

// TestAllowRuleDoesNotCoverArgumentWrites: an allow rule that names a
// command ("sort:*", "find:*", "curl:*") allowed it writing a file
// outside the working directories that its arguments name ("sort -o
// /srv/x", "find . -fprint /srv/x", "curl -o /srv/x URL", "cp a /srv/x",
// "dd of=/srv/x"), where the same write through a redirection ("sort >
// /srv/x") asks; such a line now falls to the mode, with no rule
// suggested, and one to a dangerous path ("sort -o /etc/passwd", "curl
// -o ~/.bashrc URL") is a safety ask whatever the rules. The same writes
// inside the working directories are the command's, as before.
func TestAllowRuleDoesNotCoverArgumentWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Symlink(other, filepath.Join(wd, "link")); err != nil {
		t.Fatal(err)
	}
	p := Policy{Rules: argWriteRules(t), WorkingDirs: []string{wd}}
	out := other + "/x"
	for _, line := range []string{
		"find . -fprint " + out,
		"find . -name '*.go' -fprint0 " + out,
		"find . -fprintf " + out + " '%p\\n'",
		"find . -fls " + out,
		"find . -fls link/x",
		"sort -o " + out + " in.txt",
		"sort -o" + out + " in.txt",
		"sort -uo " + out + " in.txt",
		"sort --output=" + out + " in.txt",
		"sort --output " + out + " in.txt",
		"sort --out=" + out + " in.txt",
		"sort -o ../x in.txt",
		"sort -o $OUT in.txt",
		"/usr/bin/sort -o " + out + " in.txt",
		"sudo sort -o " + out + " in.txt",
		"git log --output=" + out,
		"git log --output " + out,
		"git diff --output=" + out + " HEAD~1",
		"git show --output=" + out,
		"git format-patch -o " + other + " HEAD~3",
		"git format-patch -o" + other + " HEAD~3",
		"git format-patch --output-directory " + other + " HEAD~3",
		"git format-patch --output-directory=" + other + " HEAD~3",
		"git -C " + other + " log --output=x",
		"tee " + out,
		"tee -a " + out,
		"tee out.txt " + out,
		"cp a.txt " + out,
		"cp -r src " + other,
		"cp -t " + other + " a.txt b.txt",
		"cp --target-directory=" + other + " a.txt",
		"cp a.txt -t" + other,
		"mv a.txt " + out,
		"mv " + out + " a.txt", // the source is removed
		"install -m 755 tool " + out,
		"install -d " + other + "/bin",
		"ln -s a.txt " + out,
		"ln -sf a.txt link/y",
		"dd if=a.img of=" + out,
		"dd of=" + out + " bs=1M",
		"curl -o " + out + " https://example.com/x",
		"curl -sSLo " + out + " https://example.com/x",
		"curl --output " + out + " https://example.com/x",
		"curl -o" + out + " https://example.com/x",
		"wget -O " + out + " https://example.com/x",
		"wget -O" + out + " https://example.com/x",
		"wget --output-document=" + out + " https://example.com/x",
		"wget -P " + other + " https://example.com/x",
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
		"find . -fprint found.txt",
		"find . -name '*.go' -fprint0 sub/found",
		"find . -fprintf found.txt '%p\\n'",
		"find . -fls " + wd + "/list.txt",
		"sort -o sorted.txt in.txt",
		"sort -uo sorted.txt " + other + "/in.txt",
		"sort --output=sorted.txt in.txt",
		"sort -k2 -t, in.txt -o sorted.txt",
		"git log --output=log.txt",
		"git diff --output=d.patch HEAD~1",
		"git log --oneline -5",
		"git format-patch -o patches HEAD~3",
		"git format-patch --output-directory=patches HEAD~3",
		"tee out.txt",
		"tee -a out.txt sub/out2.txt",
		"cp " + other + "/a.txt .",
		"cp " + other + "/a.txt b.txt",
		"cp -r " + other + " vendored",
		"cp -t sub a.txt b.txt",
		"mv a.txt b.txt",
		"install -m 755 " + other + "/tool bin/tool",
		"install -d bin",
		"ln -s " + other + "/a.txt a-link",
		"dd if=" + other + "/a.img of=a.img bs=1M",
		"curl -sSLo x.tar.gz https://example.com/x",
		"curl -O https://example.com/x",
		"curl https://example.com/x",
		"wget -O x.tar.gz https://example.com/x",
		"wget https://example.com/x",
		"sudo sort -o sorted.txt in.txt",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"sort -o /etc/passwd in.txt",
		"sort --output=~/.bashrc in.txt",
		"sort -uo.git/hooks/pre-commit in.txt",
		"find . -fprint ~/.ssh/authorized_keys",
		"git log --output=.git/hooks/post-checkout",
		"git diff --output=/etc/cron.d/x",
		"git format-patch -o .git/hooks HEAD~1",
		"curl -o ~/.bashrc https://example.com/x",
		"curl -so/etc/profile https://example.com/x",
		"wget -O ~/.profile https://example.com/x",
		"wget --output-document=/usr/local/bin/x https://example.com/x",
		"dd if=x of=/etc/passwd",
		"install -m 755 x /usr/local/bin/x",
		"cp x ~/.bashrc",
		"cp -t ~/.ssh authorized_keys",
		"cp --target-directory=.git/hooks pre-commit",
		"tee -a ~/.ssh/authorized_keys",
		"ln -sf x .git/hooks/pre-push",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}

// shellAllowRules are allow rules for execute_shell_command, one
// "NAME:*" for each name.
func shellAllowRules(t *testing.T, names ...string) []Rule {
	t.Helper()
	rules := make([]Rule, 0, len(names))
	for _, name := range names {
		rules = append(rules, rule(t, "execute_shell_command:"+name+":*", Allow))
	}
	return rules
}
