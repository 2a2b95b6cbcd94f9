package permission

import "testing"

// TestAllowRuleNeedsScriptFromHereDocument: "bash:*" asked for "bash -c
// 'rm -rf x'" but allowed "bash <<< 'rm -rf x'" and "bash <<EOF … EOF",
// where the shell runs the here-string's or here-document's body as its
// script: on a line that runs a shell, the body's commands are now
// commands of the line for allow rules too, allowed when a rule covers
// them or they only read.
func TestAllowRuleNeedsScriptFromHereDocument(t *testing.T) {
	p := Policy{Rules: []Rule{rule(t, "execute_shell_command:bash:*", Allow), rule(t, "execute_shell_command:cat:*", Allow)}}
	for _, c := range []struct {
		line string
		want Behavior
	}{
		{"bash <<< 'rm -rf x'", Ask},
		{"bash <<EOF\nrm -rf x\nEOF", Ask},
		{"bash <<EOF\nls -la\nEOF", Allow},
		{"bash <<< 'ls'", Allow},
		{"cat <<EOF\nrm -rf x\nEOF", Allow}, // no shell runs it: text
	} {
		if d := Decide(p, shell, cmd(c.line)); d.Behavior != c.want {
			t.Errorf("%q: %s (%s), want %s", c.line, d.Behavior, d.Reason, c.want)
		}
	}
}
