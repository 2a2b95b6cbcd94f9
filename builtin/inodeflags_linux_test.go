package builtin_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// chattr sets the inode flag (i or a) on path for the rest of the test,
// skipping where the worker or the file system cannot set it.
func chattr(t *testing.T, path, flag string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("only root may set the immutable and append-only flags")
	}
	if out, err := exec.Command("chattr", "+"+flag, path).CombinedOutput(); err != nil {
		t.Skipf("chattr +%s is not supported here: %v %s", flag, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("chattr", "-"+flag, path).CombinedOutput(); err != nil {
			t.Errorf("chattr -%s %s: %v %s", flag, path, err, out)
		}
	})
}

// TestEditNamesInodeFlag: an edit refused by the file's immutable or
// append-only flag, or by its directory's immutable flag, says so, and
// what removes it, rather than a bare "permission denied" that root
// cannot make sense of.
func TestEditNamesInodeFlag(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	writeFile(t, filepath.Join(ws, "frozen.txt"), "1\n2\n")
	writeFile(t, filepath.Join(ws, "log.txt"), "1\n2\n")
	locked := filepath.Join(ws, "locked")
	if err := os.Mkdir(locked, 0o755); err != nil {
		t.Fatal(err)
	}
	chattr(t, filepath.Join(ws, "frozen.txt"), "i")
	chattr(t, filepath.Join(ws, "log.txt"), "a")
	chattr(t, locked, "i")

	for _, c := range []struct {
		name, tool string
		in         map[string]any
		want       []string
	}{
		{"overwrite immutable", builtin.WriteTextFile, editInput("frozen.txt", map[string]any{"content": "x\n"}), []string{`"frozen.txt" is immutable`, "chattr -i", "Nothing was written"}},
		{"ranges immutable", builtin.WriteTextFile, editInput("frozen.txt", map[string]any{"content": "x\n", "ranges": []any{1, 1}}), []string{`"frozen.txt" is immutable`, "chattr -i"}},
		{"insert immutable", builtin.InsertTextFile, editInput("frozen.txt", map[string]any{"content": "x", "line_number": 1}), []string{`"frozen.txt" is immutable`, "chattr -i"}},
		{"overwrite append-only", builtin.WriteTextFile, editInput("log.txt", map[string]any{"content": "x\n"}), []string{`"log.txt" is append-only`, "chattr -a", "Nothing was written"}},
		{"insert append-only", builtin.InsertTextFile, editInput("log.txt", map[string]any{"content": "x", "line_number": 3}), []string{`"log.txt" is append-only`, "chattr -a"}},
		{"create in immutable directory", builtin.WriteTextFile, editInput("locked/new.txt", map[string]any{"content": "x\n"}), []string{`"locked/new.txt"`, "cannot be made: its directory is immutable", "chattr -i"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, invoke(t, tk, c.tool, c.in), toolkit.CodeToolError, c.want...)
		})
	}
	for _, f := range []string{"frozen.txt", "log.txt"} {
		if got := readFile(t, filepath.Join(ws, f)); got != "1\n2\n" {
			t.Errorf("%s = %q, want it untouched", f, got)
		}
	}
	if got := entries(t, locked); len(got) != 0 {
		t.Errorf("the immutable directory holds %q", got)
	}
}
