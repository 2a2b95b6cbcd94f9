package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
)

// A permissions rule with a pattern for a tool that takes none (an MCP
// tool, execute_python_code, echo) matches no call: a deny written so
// denies nothing, silently. --check-config warns of it; the shell and
// file tools' patterns pass.
func TestCheckWarnsOfPatternsThatMatchNothing(t *testing.T) {
	cfg, err := config.Parse("w.yaml", []byte("permissions:\n  mode: bypass\n  deny: [\"mcp__ev__write:/etc/**\", \"execute_shell_command:git push:*\", \"write_text_file:*.env\"]\n  allow: [echo]\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := checkMounts(cfg, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Count(got, "warning: ") != 1 || !strings.Contains(got, "mcp__ev__write:/etc/**") || !strings.Contains(got, "matches no call") {
		t.Fatalf("output %q: want one warning naming the MCP tool's rule", got)
	}
}
