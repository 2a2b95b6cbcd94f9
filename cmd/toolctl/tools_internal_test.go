package main

import "testing"

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
