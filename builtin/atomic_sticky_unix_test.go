//go:build unix

package builtin_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/builtin"
)

// editStickyEnv names the workspace a child of TestEditInStickyDirectory
// edits, as an unprivileged user.
const editStickyEnv = "TOOLBUS_TEST_EDIT_STICKY"

// TestEditInStickyDirectory: in a world-writable directory with the
// sticky bit (/tmp's kind), a worker that is not root may write another
// user's world-writable file but not rename over it. The edit is made in
// place then, as before edits were atomic, rather than refused.
func TestEditInStickyDirectory(t *testing.T) {
	if ws := os.Getenv(editStickyEnv); ws != "" {
		tk, _ := fileKit(t, builtin.Config{Workspace: ws})
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("shared/f.txt", map[string]any{"content": "two\n", "ranges": []any{2, 2}})))
		wantOK(t, invoke(t, tk, builtin.InsertTextFile, editInput("shared/f.txt", map[string]any{"content": "zero", "line_number": 1})))
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the edit as another user")
	}
	const owner, worker = 65533, 65534
	ws := t.TempDir()
	dir := filepath.Join(ws, "shared")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f.txt")
	writeFile(t, path, "1\n2\n3\n")
	if err := os.Chown(path, owner, owner); err != nil {
		t.Skipf("cannot give the file away here: %v", err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	asUser(t, "TestEditInStickyDirectory", editStickyEnv, ws, worker)
	if got := readFile(t, path); got != "zero\n1\ntwo\n3\n" {
		t.Errorf("file = %q, want both edits", got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != owner {
		t.Errorf("owner = %d, want %d (edited in place)", st.Uid, owner)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "f.txt" {
		t.Errorf("the directory holds %q, want only f.txt", got)
	}
}
