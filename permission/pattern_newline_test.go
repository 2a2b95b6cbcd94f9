package permission

import "testing"

// A file name or a quoted argument may hold a newline: "*" and "**" of a
// rule's pattern cross it as they cross any other character, or a deny
// rule would not see "/srv/secrets/a<newline>b" or
// "git push --force 'a<newline>b'".
func TestRulePatternsCrossNewlines(t *testing.T) {
	wd := t.TempDir()
	cases := []struct {
		rule  string
		tool  string
		input map[string]any
	}{
		{WriteFileTool + ":" + wd + "/secrets/**", WriteFileTool, file(wd + "/secrets/a\nb.key")},
		{WriteFileTool + ":" + wd + "/secrets/**", WriteFileTool, file(wd + "/secrets/a\n/b.key")},
		{WriteFileTool + ":secrets/", WriteFileTool, file("secrets/a\nb.key")},
		{WriteFileTool + ":**/secrets/**", WriteFileTool, file("x\ny/secrets/a.key")},
		{ShellTool + ":git push --force*", ShellTool, cmd("git push --force 'a\nb'")},
		{ShellTool + ":*--force*", ShellTool, cmd("git push origin 'a\nb' --force")},
	}
	for _, c := range cases {
		p := Policy{Mode: ModeBypass, Rules: []Rule{rule(t, c.rule, Deny)}, WorkingDirs: []string{wd}}
		var tl = writeFile
		if c.tool == ShellTool {
			tl = shell
		}
		if d := Decide(p, tl, c.input); d.Behavior != Deny {
			t.Errorf("deny %s, input %q: %s (%s), want deny", c.rule, c.input, d.Behavior, d.Reason)
		}
	}
}
