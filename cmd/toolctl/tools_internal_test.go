package main

import (
	"testing"

	"github.com/toolbus/toolbus/skill"
)

// TestFirstLineDropsTerminalEscapes: a tool's description (a mounted MCP
// server writes it) is printed by toolctl tools, groups and skills; its
// control characters reached the operator's terminal as they were, so an
// escape sequence in a description could retitle, clear or rewrite the
// terminal. They are printed as spaces.
func TestFirstLineDropsTerminalEscapes(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                             "plain",
		"first\nsecond":                     "first",
		"bad\x1b[2J\x1b]0;owned\x07 desc\r": "bad [2J ]0;owned  desc ",
		"tab\tand\x00nul":                   "tab and nul",
	} {
		if got := firstLine(in, 70); got != want {
			t.Errorf("firstLine(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSkillRowQuotesNames: a skill's name (YAML escapes allow "\e" in
// it) and its directory's name come from a worker's skills directory;
// toolctl skills printed them as they were, so they could drive the
// operator's terminal or add rows. They are Go-quoted when they hold
// anything not printable.
func TestSkillRowQuotesNames(t *testing.T) {
	for _, tt := range []struct {
		s    skill.Skill
		want string
	}{
		{skill.Skill{Name: "pdf", Group: "basic", Dir: "/srv/skills/pdf", Description: "Fill forms."}, "pdf\tbasic\t/srv/skills/pdf\tFill forms.\n"},
		{skill.Skill{Name: "a\x1b]0;owned\x07", Group: "basic", Dir: "/srv/x\nfake\trow", Description: "d"}, `"a\x1b]0;owned\a"` + "\tbasic\t" + `"/srv/x\nfake\trow"` + "\td\n"},
	} {
		if got := skillRow(tt.s); got != tt.want {
			t.Errorf("skillRow(%+v) = %q, want %q", tt.s, got, tt.want)
		}
	}
}

// TestFirstLineDropsFormatCharacters: a description's bidi overrides
// (U+202E turns the rest of the row around), zero-width and line or
// paragraph separators are not controls (unicode.IsControl) but are not
// printable either; they reached the operator's terminal from a mounted
// MCP server's description. They are printed as spaces, as controls are.
func TestFirstLineDropsFormatCharacters(t *testing.T) {
	for in, want := range map[string]string{
		"safe \u202eexe.txt":        "safe  exe.txt",
		"a\u2066b\u2069c\u200bd":    "a b c d",
		"line\u2028next\u2029para":  "line next para",
		"C1\u009b31m and \u0085nel": "C1 31m and  nel",
		"café ünïcode ✓":            "café ünïcode ✓",
	} {
		if got := firstLine(in, 70); got != want {
			t.Errorf("firstLine(%q) = %q, want %q", in, got, want)
		}
	}
}
