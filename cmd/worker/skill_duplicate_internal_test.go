package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/config"
)

// Two skill directories declaring a skill of the same name: the worker
// logs at start that the later replaces the earlier; --check-config says
// so too, naming both.
func TestCheckWarnsOfDuplicateSkills(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a", "b"} {
		dir := filepath.Join(root, d, "pdf")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: pdf\ndescription: PDFs, from "+d+".\n---\nBody.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yaml := "skills:\n  - dir: " + filepath.Join(root, "a") + "\n    scan_subdirs: true\n  - dir: " + filepath.Join(root, "b") + "\n    scan_subdirs: true\n"
	cfg, err := config.Parse("w.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := checkMounts(cfg, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.Count(got, "warning: ") != 1 || !strings.Contains(got, filepath.Join(root, "a", "pdf")) || !strings.Contains(got, filepath.Join(root, "b", "pdf")) {
		t.Fatalf("output %q: want one warning naming both skills called pdf", got)
	}
}
