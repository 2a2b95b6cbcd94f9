package permission

import (
	"strings"
	"testing"
)

// TestShellWildcardPatterns: a shell pattern with a "*" inside was made
// into a regular expression on every match. A pattern that is not UTF-8
// made regexp.MustCompile panic, for every shell call of the session,
// and one of many "*" matched in time that grew as the product of its
// length and the command's (32768 of them against a 64 KiB command: 49
// seconds). A wildcard matches any text, newlines included.
func TestShellWildcardPatterns(t *testing.T) {
	tests := []struct {
		pattern, cmd string
		want         bool
	}{
		{"git * --force", "git push origin --force", true},
		{"git * --force", "git push --force-with-lease", false},
		{"git*push", "git push", true},
		{"git*push", "gitpush", true},
		{"*rm*", "sudo rm -rf x", true},
		{"a*a", "a", false},
		{"a*a", "aa", true},
		{"a*b*c", "acb", false},
		{"a*b*c", "abbc", true},
		{"echo *x*", "echo 'a\nx\nb'", true},
		{"git \xff*x", "git \xff x", true},
		{"git \xff*x", "git y", false},
		{strings.Repeat("a*", 32<<10), strings.Repeat("a", 64<<10) + "b", true},
		{strings.Repeat("a*", 32<<10) + "c", strings.Repeat("a", 64<<10) + "b", false},
	}
	for _, tt := range tests {
		if got := matchCommand(tt.pattern, tt.cmd); got != tt.want {
			t.Errorf("matchCommand(%.40q, %.40q) = %v, want %v", tt.pattern, tt.cmd, got, tt.want)
		}
	}
	deny := Policy{Mode: ModeBypass, Rules: []Rule{{Tool: ShellTool, Pattern: "git \xff*x", Behavior: Deny}}}
	if d := Decide(deny, shell, cmd("git status")); d.Behavior != Allow {
		t.Errorf("a deny pattern that is not UTF-8, another command: %s (%s), want allow", d.Behavior, d.Reason)
	}
}
