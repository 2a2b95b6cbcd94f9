package main

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
)

// TestDescribeCounts: --check-config's summary counts in words that agree
// with the number ("1 groups", "1 skill directories" before).
func TestDescribeCounts(t *testing.T) {
	cfg := config.Default()
	cfg.Groups = []config.Group{{Name: "g", Description: "G."}}
	cfg.Skills = []config.Skills{{Dir: "/skills"}}
	cfg.Builtins.Tools = []config.BuiltinTool{{Name: "view_text_file"}}
	got := describe(cfg)
	for _, want := range []string{", 1 group,", ", 0 MCP servers,", ", 1 skill directory"} {
		if !strings.Contains(got, want) {
			t.Errorf("describe = %q, want %q in it", got, want)
		}
	}
}
