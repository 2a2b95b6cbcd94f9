package permission

import "testing"

// TestSuggestedRulesValidate: a command whose name begins or ends with a
// character the shell takes as part of it but a rule trims (a carriage
// return, a form feed, a no-break space) is not suggested as a rule: the
// rule would not validate, and written out and read back it would be
// another rule (execute_shell_command:\r:* read as the pattern ":*").
func TestSuggestedRulesValidate(t *testing.T) {
	shell := tool(ShellTool, false)
	for _, line := range []string{"\r", "\rrm x", "\frm x", "\u00a0rm x", "rm\r x", "git status; \vmake x"} {
		d := Decide(Policy{}, shell, map[string]any{"command": line})
		for _, r := range d.Suggested {
			if err := r.Validate(); err != nil {
				t.Errorf("%q: suggested %s: %v", line, r, err)
			}
		}
	}
}
