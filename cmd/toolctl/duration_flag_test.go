package main

import (
	"strings"
	"testing"
)

// TestDurationFlagsWithoutUnit: a duration flag given a number without a
// unit (call --timeout 30) is bad usage that says what a duration looks
// like, as the worker's config does, rather than "parse error"; the help
// still names each one a duration.
func TestDurationFlagsWithoutUnit(t *testing.T) {
	for _, args := range [][]string{
		{"call", "--timeout", "30", "echo", `{"text":"hi"}`},
		{"tools", "--wait", "2"},
		{"top", "--interval", "2"},
		{"mcp-headers", "--wait", "1", "srv"},
		{"mcp", "serve", "--call-timeout", "10"},
		{"mcp", "serve", "--session-timeout", "10"},
		{"mcp", "serve", "--stream-poll", "10"},
		{"mcp", "stdio", "--drain", "10"},
		{"mcp", "login", "--login-timeout", "10", "srv"},
	} {
		code, _, errs := toolctl(t, args...)
		if code != exitUsage || !strings.Contains(errs, "want a duration such as 30s, 1m30s or 2h") {
			t.Errorf("toolctl %s: exit %d:\n%s", strings.Join(args, " "), code, errs)
		}
	}
	_, _, errs := toolctl(t, "call", "-h")
	if !strings.Contains(errs, "-timeout duration\n") {
		t.Errorf("help of call --timeout:\n%s", errs)
	}
}
