package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
)

// A warning is one line of plain text whatever names it quotes: a skill
// directory named with a newline or a terminal escape cannot forge lines
// of --check-config's output or drive the operator's terminal.
func TestCheckWarningsPrintable(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "x\nconfiguration OK\x1b[2J\xff")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "SKILL.md"), []byte("no front matter"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("w.yaml", []byte("skills:\n  - dir: "+dir+"\n    scan_subdirs: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := checkMounts(cfg, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Count(got, "\n") != 1 || strings.ContainsAny(got, "\x1b\xff") || !strings.Contains(got, `x\nconfiguration OK\x1b[2J\xff`) {
		t.Fatalf("output %q, want one line with the name escaped", got)
	}
}
