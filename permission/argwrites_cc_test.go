package permission

import "testing"

// TestCompilerOutputs: "gcc:*", "cc:*" and "clang:*" allowed a compiler
// writing its output outside the working directories ("gcc -o /srv/x
// a.c", "cc -o/srv/x a.c"), where the same write through a redirection
// asks, and "gcc -o .git/hooks/pre-commit hook.c" was a safety ask only
// because the path has a slash; -o's file is now a write, as sort -o's
// is.
func TestCompilerOutputs(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "gcc", "g++", "cc", "clang", "clang++", "ld", "cd")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	out := other + "/x"
	for _, line := range []string{
		"gcc -o " + out + " a.c",
		"gcc -O2 -Wall a.c -o " + out,
		"cc -o" + out + " a.c",
		"g++ -std=c++17 -o " + out + " a.cc",
		"clang -c a.c -o " + out,
		"clang++ a.cc -o " + out,
		"ld -o " + out + " a.o",
		"/usr/bin/gcc -o " + out + " a.c",
		"cd " + other + " && gcc -o x a.c",
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
		"gcc -o app main.c",
		"gcc -O2 -c main.c",
		"cc -Wall -o build/app main.c -I" + other + "/include",
		"clang -o build/app main.c",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"cd .git && gcc -o hooks/pre-commit " + wd + "/hook.c",
		"cd /var && gcc -o lib " + wd + "/a.c",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
