package permission

import (
	"slices"
	"testing"
)

// TestAllowRuleNeedsInnerCommands: an allow rule covered a command and
// every command it runs inside itself, so "find:*" allowed "find . -exec
// rm -rf x {} ;", "go test:*" allowed "go test -exec 'rm -rf x' ./...",
// "npm test:*" allowed "npm test --script-shell=…" and "xargs:*" allowed
// "xargs rm"; a command run inside another is now a command of the line
// for allow rules too, as the commands of "a && b" are: allowed only
// when an allow rule covers it or it is read-only. Another reading of
// the same command (its path's base name, git's subcommand without git's
// options) is not a command it runs: the rule as written covers it.
func TestAllowRuleNeedsInnerCommands(t *testing.T) {
	allow := func(patterns ...string) Policy {
		p := Policy{}
		for _, pat := range patterns {
			p.Rules = append(p.Rules, rule(t, "execute_shell_command:"+pat, Allow))
		}
		return p
	}
	for _, c := range []struct {
		rules []string
		line  string
		want  Behavior
	}{
		{[]string{"find:*"}, `find . -exec rm -rf x {} \;`, Ask},
		{[]string{"find:*"}, `find . -name '*.tmp' -execdir rm {} +`, Ask},
		{[]string{"find:*"}, `find . -ok sh -c 'rm -rf x' \;`, Ask},
		{[]string{"find:*", "rm:*"}, `find . -exec rm -rf x {} \;`, Allow},
		{[]string{"find:*"}, `find . -exec cat {} \;`, Allow}, // cat only reads
		{[]string{"find:*"}, `find . -exec grep -l x {} +`, Allow},
		{[]string{"go test:*"}, "go test -exec 'rm -rf x' ./...", Ask},
		{[]string{"go test:*"}, "go test -toolexec=rm ./...", Ask},
		{[]string{"go build:*"}, "GOFLAGS=-toolexec=rm go build ./...", Ask},
		{[]string{"go test:*"}, "go test -exec echo ./...", Allow},
		{[]string{"go test:*"}, "go test -run TestX ./...", Allow},
		{[]string{"npm test:*"}, "npm test --script-shell=/tmp/evil", Ask},
		{[]string{"npm test:*"}, "npm test --script-shell /tmp/evil", Ask},
		{[]string{"npm run:*"}, "npm run build --script-shell=rm", Ask},
		{[]string{"npm test:*"}, "npm test", Allow},
		{[]string{"npm test:*"}, "npm test -- --watch", Allow},
		{[]string{"xargs:*"}, "xargs rm -rf", Ask},
		{[]string{"xargs:*"}, "xargs -n1 grep x", Allow},
		{[]string{"find:*", "xargs:*"}, "find . -name '*.go' | xargs rm", Ask},
		{[]string{"find:*"}, `find . -exec xargs rm \;`, Ask},
		{[]string{"sudo:*"}, "sudo rm -rf x", Ask},
		{[]string{"sudo:*", "rm:*"}, "sudo rm -rf x", Allow},
		{[]string{"timeout:*"}, "timeout 10 make", Ask},
		{[]string{"timeout:*", "make:*"}, "timeout 10 make", Allow},
		{[]string{"bash:*"}, "bash -c 'rm -rf x'", Ask},
		{[]string{"bash:*"}, "bash -c 'ls -la'", Allow},
		{[]string{"git log:*"}, "git -c core.pager='rm -rf x' log", Ask},
		{[]string{"git -c core.pager=less log:*"}, "git -c core.pager=less log", Ask},
		{[]string{"git -c core.pager=less log:*", "less:*"}, "git -c core.pager=less log", Allow},
		{[]string{"env:*"}, "env rm -rf x", Ask},
		{[]string{"env:*", "X=1 make:*"}, "env X=1 make", Allow},
		{[]string{"env:*", "make:*"}, "env X=1 make", Ask}, // the assignment changes what runs
		// A rule on the outer command that names the inner one covers it.
		{[]string{"sudo rm:*"}, "sudo rm -rf x", Allow},
		{[]string{"sudo rm -rf x"}, "sudo rm -rf x", Allow},
		{[]string{"timeout 10 make:*"}, "timeout 10 make all", Allow},
		{[]string{"xargs rm:*"}, "xargs rm -f", Allow},
		{[]string{"sudo timeout:*"}, "sudo timeout 10 rm x", Ask},
		{[]string{"bash -c ls:*"}, "bash -c 'ls; rm x'", Ask},
		{[]string{"sudo -u rm:*"}, "sudo -u rm rm -rf x", Ask},
		{[]string{"sudo * x"}, "sudo rm -rf x", Ask},
		{[]string{`find . -exec rm -rf x {} ;`}, `find . -exec rm -rf x {} \;`, Allow},
		// A script's command whose line has a substitution is not read-only.
		{[]string{"bash:*"}, "bash -c 'echo ${x@P}'", Ask},
		{[]string{"bash:*"}, "bash -c 'echo $(rm x)'", Ask},
		{[]string{"bash:*"}, "bash -c 'echo $(date)'", Ask},
		// Readings of the command itself.
		{[]string{"/usr/bin/make:*"}, "/usr/bin/make all", Allow},
		{[]string{"git -C sub push:*"}, "git -C sub push origin main", Allow},
		{[]string{"npm --prefix web test:*"}, "npm --prefix web test", Allow},
		{[]string{"npm --foo bar test:*"}, "npm --foo bar test", Allow},
		{[]string{"git-push:*"}, "git-push origin main", Allow},
	} {
		if d := Decide(allow(c.rules...), shell, cmd(c.line)); d.Behavior != c.want {
			t.Errorf("allow %q, %q: %s (%s), want %s", c.rules, c.line, d.Behavior, d.Reason, c.want)
		}
	}
	// Deny and ask rules see the inner commands as before, and in bypass
	// mode nothing asks.
	denyRulesSee(t, []string{
		`find . -exec rm -rf x {} \;`,
		"go test -exec 'rm -rf x' ./...",
		"npm test --script-shell=rm",
		"npm --script-shell rm test",
		"npm_config_script_shell=rm npm test",
		"xargs rm -rf",
	}, nil, []string{
		`find . -exec cat {} \;`,
		"npm test --script-shell=bash",
	})
}

// TestSuggestedRulesCoverInnerCommands: the rules suggested for a line
// whose command runs another allow it once added: "find:*" and "rm:*"
// for find -exec rm, "sudo rm:*" alone for sudo rm.
func TestSuggestedRulesCoverInnerCommands(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{`find . -exec rm -rf x {} \;`, []string{"find:*", "rm:*"}},
		{"go test -exec 'rm -rf x' ./...", []string{"go test:*", "rm:*"}},
		{"npm test --script-shell=/tmp/sh", []string{"npm test:*", "/tmp/sh:*"}},
		{"sudo rm -rf x", []string{"sudo rm:*"}},
		{"xargs rm -f", []string{"xargs rm:*"}},
		{"timeout 10 make", []string{"timeout:*", "make:*"}},
		{`find . -exec cat {} \;`, []string{"find:*"}},
	} {
		d := Decide(Policy{}, shell, cmd(c.line))
		var got []string
		p := Policy{}
		for _, r := range d.Suggested {
			got = append(got, r.Pattern)
			p.Rules = append(p.Rules, r)
		}
		if d.Behavior != Ask || !slices.Equal(got, c.want) {
			t.Errorf("%q: %s, suggested %q, want ask and %q", c.line, d.Behavior, got, c.want)
		}
		if d := Decide(p, shell, cmd(c.line)); d.Behavior != Allow {
			t.Errorf("%q with the suggested rules: %s (%s), want allow", c.line, d.Behavior, d.Reason)
		}
	}
}
