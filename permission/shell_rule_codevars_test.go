package permission

import "testing"

// TestDenyRuleSeesShellCodeVariables: a shell runs the code some
// variables hold (BASH_ENV and ENV name a file it sources, zsh sources
// $ZDOTDIR/.zshenv, PROMPT_COMMAND and the prompts' command
// substitutions run in an interactive shell or under xtrace, SHELLOPTS
// and BASHOPTS turn xtrace on, BASH_FUNC_name%% defines a function), so
// "BASH_ENV=f bash -c ls" or "PROMPT_COMMAND='rm x' bash -i" may run rm
// while a deny or ask rule on rm saw only bash; such an assignment
// (before a command, a bare one, or through env, export, declare,
// typeset, local or readonly) now matches every deny and ask pattern,
// as a name the shell computes does.
func TestDenyRuleSeesShellCodeVariables(t *testing.T) {
	lines := []string{
		"BASH_ENV=f bash -c ls",
		"ENV=f sh -i",
		"ENV=f sh -c ls",
		"ZDOTDIR=/tmp/z zsh -c ls",
		"PROMPT_COMMAND='rm -rf x' bash -i",
		"PS0='$(rm -rf x)' bash -i",
		"PS1='$(rm -rf x)' bash -i",
		"PS2='$(rm -rf x)' bash -i",
		"PS4='$(rm -rf x)' bash -xc ls",
		"PS4='$(rm -rf x)' SHELLOPTS=xtrace bash -c ls",
		"PS4='$(rm -rf x)'; set -x; ls",
		"SHELLOPTS=xtrace bash -c ls",
		"BASHOPTS=extdebug bash -c ls",
		"BASH_ENV+=f bash -c ls",
		"env BASH_ENV=f bash -c ls",
		"env -i PS4='$(rm -rf x)' SHELLOPTS=xtrace bash -c ls",
		"sudo env BASH_ENV=f bash -c ls",
		"export BASH_ENV=f; bash -c ls",
		"export PS4='$(rm -rf x)' SHELLOPTS; bash -xc ls",
		"declare -x PS4='$(rm -rf x)'; set -x; ls",
		"typeset -x ENV=f; sh -i",
		"readonly PROMPT_COMMAND='rm -rf x'",
		"f() { local PS4='$(rm -rf x)'; set -x; ls; }; f",
		"env 'BASH_FUNC_ls%%=() { rm -rf x; }' bash -c ls",
		"PROMPT_COMMAND[0]='rm -rf x' bash -i",
		"/usr/bin/env ENV=f sh -i",
	}
	ask := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:git push:*", Ask)}}
	for _, c := range lines {
		if d := Decide(ask, shell, cmd(c)); d.Behavior != Ask {
			t.Errorf("ask git push:*, %q: %s (%s), want ask", c, d.Behavior, d.Reason)
		}
	}
	denyRulesSee(t, lines, nil, []string{
		"git status",
		"ls -la",
		"npm test",
		"go test ./...",
		"NODE_ENV=test npm test",
		"MYPS1=x ls",
		"echo PS1=x BASH_ENV=f",
		"export PATH=$PATH:/x; make",
		"env FOO=1 bash -c ls",
	})
	for _, c := range []string{
		"export PS4='$(touch p)' SHELLOPTS; bash -xc ls",
		"export BASH_ENV=f",
		"declare -x ENV=f",
		"readonly PROMPT_COMMAND=x",
		"env BASH_ENV=f",
	} {
		if shellReadOnly(c) {
			t.Errorf("shellReadOnly(%q) = true", c)
		}
	}
}
