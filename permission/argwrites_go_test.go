package permission

import "testing"

// TestGoBuildOutputs: "go build:*" and "go test:*" allowed the files go
// writes that its flags name outside the working directories ("go
// build -o /srv/x .", "go test -coverprofile=/srv/c.out ./...", "go -C
// /srv build -o x"), where the same write through a redirection asks;
// they are writes now, as sort -o is. Inside they stay the command's.
func TestGoBuildOutputs(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	rules := shellAllowRules(t, "go build", "go test", "go install", "go mod", "go")
	p := Policy{Rules: rules, WorkingDirs: []string{wd}}
	out := other + "/x"
	for _, line := range []string{
		"go build -o " + out + " .",
		"go build -o=" + out + " ./cmd/app",
		"go build --o " + out + " .",
		"go build -v -trimpath -o " + out + " .",
		"go build -ldflags '-s -w' -o " + out + " .",
		"go test -c -o " + out + " ./pkg",
		"go test -coverprofile=" + out + " ./...",
		"go test -cpuprofile " + out + " -bench . ./pkg",
		"go test -memprofile=" + out + " ./pkg",
		"go test -trace=" + out + " ./pkg",
		"go test -outputdir " + other + " -cpuprofile c.out ./pkg",
		"go test -test.coverprofile=" + out + " ./pkg",
		"go -C " + other + " build -o x .",
		"go -C " + other + " test -coverprofile=c.out ./...",
		"go mod vendor -o " + other + "/vendor",
		"go build -o $OUT .",
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
		"go build -o bin/app ./cmd/app",
		"go build ./...",
		"go test -coverprofile=cover.out ./...",
		"go test -race -count=1 ./pkg",
		"go test -c -o pkg.test ./pkg",
		"go -C sub build -o bin/x .",
		"go mod vendor",
		"go build -o /dev/null ./...",
	} {
		if d := Decide(p, shell, cmd(line)); d.Behavior != Allow {
			t.Errorf("%q: %s (%s), want allow", line, d.Behavior, d.Reason)
		}
	}
	star := Policy{Rules: []Rule{rule(t, "execute_shell_command:*", Allow)}, WorkingDirs: []string{wd}}
	for _, line := range []string{
		"go -C /usr/local build -o bin .",
		"go test -c -o .git/hooks/pre-commit ./pkg",
	} {
		if d := Decide(star, shell, cmd(line)); d.Behavior != Ask || !d.Safety {
			t.Errorf("%q: %s (%s), want a safety ask", line, d.Behavior, d.Reason)
		}
	}
}
