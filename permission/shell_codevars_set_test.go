package permission

import "testing"

// TestDenyRuleSeesCodeVariablesSetByBuiltins: a code-running variable
// (PS4, PROMPT_COMMAND, BASH_ENV, …) set by printf -v, read, mapfile or
// readarray rather than by an assignment, or set in the body of a
// here-document a shell runs (bash <<EOF), made the shell run its code
// while deny and ask rules saw only printf, read or bash; mapfile -C
// CALLBACK runs the callback as a script. Those lines now match every
// deny and ask pattern, as an assignment of such a variable does, and
// mapfile's callback is one of the line's commands.
func TestDenyRuleSeesCodeVariablesSetByBuiltins(t *testing.T) {
	lines := []string{
		"printf -v PS4 '$(rm -rf x)'; set -x; ls",
		"printf -vPS4 %s '$(rm -rf x)'; set -x; ls",
		"printf -v 'PROMPT_COMMAND' 'rm -rf x'",
		"printf -v PS4[0] x",
		"read PS4 <<< '$(rm -rf x)'; set -x; ls",
		"read -r PS4 <<< '$(rm -rf x)'; set -x; ls",
		"IFS= read -r -d '' BASH_ENV < f; bash -c ls",
		"read -a PS4 <<< x",
		"read x PS4 <<< 'a $(rm -rf x)'",
		"mapfile PS4 < f",
		"mapfile -t PROMPT_COMMAND < f",
		"readarray -t -n 1 PS4 < f",
		"bash <<'EOF'\nPS4='$(rm -rf x)'\nset -x\nls\nEOF",
		"bash <<'EOF'\nexport BASH_ENV=f\nbash -c ls\nEOF",
		"sudo sh <<'EOF'\nprintf -v PS4 x\nEOF",
		"cat <<'EOF' | bash\nPROMPT_COMMAND='rm -rf x'\nEOF",
		"bash <<< 'PS4=x; set -x; ls'",
	}
	ask := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, "execute_shell_command:git push:*", Ask)}}
	for _, c := range lines {
		if d := Decide(ask, shell, cmd(c)); d.Behavior != Ask {
			t.Errorf("ask git push:*, %q: %s (%s), want ask", c, d.Behavior, d.Reason)
		}
	}
	denyRulesSee(t, append(lines,
		"mapfile -C 'rm -rf x' -c 1 lines < f",
		"readarray -C'rm -rf x' lines < f",
	), nil, []string{
		"printf -v out '%s' x",
		"printf 'PS4=%s' x",
		"read -r line < f",
		"read -p 'PS1? ' answer",
		"mapfile -t lines < f",
		"readarray lines < f",
		"mapfile -C echo -c 1 lines < f",
		// A here-document no shell runs is text.
		"cat > notes.md <<'EOF'\nPS1='$(date)'\nEOF",
		"bash <<'EOF'\nls -la\nEOF",
	})
}
