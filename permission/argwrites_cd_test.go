package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRedirectionAfterCd: "cd /elsewhere && ls > f" writes
// /elsewhere/f, but the target was checked as ./f, so "cd:*" and "ls:*"
// allowed a write outside the working directories, and "cd /var && echo
// x > lib/dpkg/status" was no safety ask. A relative target
// (redirection or argument) after a literal cd or pushd on the line is
// now checked under the directory it leads to as well; after one to a
// directory not known here (cd $X, cd -, cd, cd ~, popd) it is outside.
// The directory is followed into the scripts the line runs too, and a
// cd does not hide the shell's own directory (it may fail, or run in a
// subshell).
func TestRedirectionAfterCd(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	if err := os.Mkdir(filepath.Join(wd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	rules := shellAllowRules(t, "cd", "pushd", "popd", "ls", "make", "sort", "tee", "bash", "eval", "echo", "cp", "go test", "rm")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cd " + other + " && ls > f",
		"cd " + other + "; make 2> build.log",
		"cd .. && ls > f",
		"cd sub && cd ../.. && ls > f",
		"cd sub; cd ..; ls > f", // without sub, the second cd leaves

		"cd " + other + " && sort -o sorted.txt in.txt",
		"cd " + other + " && cp " + wd + "/a.txt .",
		"cd " + other + " && make | tee build.log",
		"pushd " + other + " && ls > f",
		"cd -- " + other + " && ls > f",
		"cd -P " + other + " && ls > f",
		"builtin cd " + other + " && ls > f",
		"eval 'cd " + other + "' && ls > f",
		"{ cd " + other + "; } && ls > f",
		"bash -c 'cd " + other + " && ls > f'",
		"cd " + other + " && bash -c 'ls > f'",
		"cd $X && ls > f",
		"cd - && ls > f",
		"cd && ls > f",
		"cd ~ && ls > f",
		"cd ~/x && ls > f",
		"pushd sub && popd && ls > f",
		"cd s* && ls > f",
		"CDPATH=" + other + " cd sub && ls > f",
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
		"cd sub && make",
		"cd sub && make > build.log 2>&1",
		"cd sub && sort -o sorted.txt in.txt",
		"cd " + wd + "/sub && ls > f",
		"cd sub && go test ./... 2>&1 | tee out.txt",
		"pushd sub && make > build.log",
		"cd sub && cp " + other + "/a.txt .",
		"ls > f && cd " + other, // written before the cd
		"cd " + other + " && ls",
		"cd " + other + " && ls > /dev/null",
		"cd " + other + " && ls > " + wd + "/f",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cd .git/hooks && echo x > pre-commit",
		"cd .git && cp x hooks/pre-push",
		"cd /etc && echo x >> passwd",
		"cd /etc; sort -o passwd x",
		"cd ~/.ssh && tee -a authorized_keys < k",
		"cd && echo x > .ssh/authorized_keys",
		"bash -c 'cd .git/hooks; echo x > pre-commit'",
		"cd .git; bash -c 'echo x > hooks/pre-commit'",
		"cd / && rm -rf usr",
		"cd /var && echo x > lib/dpkg/status",
		"cd /var; sort -o lib/x y",
		"cd /var && bash -c 'cp x lib/y'",
		"cd /opt && rm -rf ..",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
