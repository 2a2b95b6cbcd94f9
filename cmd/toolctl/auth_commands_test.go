package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAuthInitCommands: the commands auth init prints run the binaries
// the user has: go run for a toolctl started by go run, else this toolctl
// and the worker beside it (or the worker on the PATH), as the worker's
// try line does; before, always go run, which fails outside the source tree.
func TestAuthInitCommands(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "toolctl")
	if tc, w := fleetCommands(exe); tc != exe || w != "worker" {
		t.Errorf("toolctl %s without a worker beside it: got %q, %q; want %q, worker", exe, tc, w, exe)
	}
	if err := os.WriteFile(filepath.Join(dir, "worker"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if tc, w := fleetCommands(exe); tc != exe || w != filepath.Join(dir, "worker") {
		t.Errorf("toolctl %s with a worker beside it: got %q, %q", exe, tc, w)
	}
	built := filepath.Join(os.TempDir(), "go-build123", "b001", "exe", "toolctl")
	if tc, w := fleetCommands(built); tc != "go run ./cmd/toolctl" || w != "go run ./cmd/worker" {
		t.Errorf("toolctl started by go run: got %q, %q", tc, w)
	}
}
