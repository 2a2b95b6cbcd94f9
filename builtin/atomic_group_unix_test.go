//go:build unix

package builtin_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/builtin"
)

// editAsUserEnv names the workspace a child of TestEditKeepsGroup edits,
// as an unprivileged user.
const editAsUserEnv = "TOOLBUS_TEST_EDIT_AS_USER"

// TestEditKeepsGroup: a worker that is not root edits a group-writable
// file of another user in a group the worker belongs to (a shared
// workspace). It cannot give the file to the user, but it can keep the
// file's group, and must: the group would otherwise lose its write
// access to the file, which it had before the edit.
func TestEditKeepsGroup(t *testing.T) {
	if ws := os.Getenv(editAsUserEnv); ws != "" {
		tk, _ := fileKit(t, builtin.Config{Workspace: ws})
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("f.txt", map[string]any{"content": "new\n"})))
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the edit as another user")
	}
	const owner, worker, shared = 65533, 65534, 64999
	ws := t.TempDir()
	path := filepath.Join(ws, "f.txt")
	writeFile(t, path, "old\n")
	if err := os.Chown(path, owner, shared); err != nil {
		t.Skipf("cannot give the file away here: %v", err)
	}
	if err := os.Chmod(path, 0o664); err != nil {
		t.Fatal(err)
	}
	asUser(t, "TestEditKeepsGroup", editAsUserEnv, ws, worker, shared)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "new\n" {
		t.Fatalf("content %q, want the edit", got)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Gid != shared {
		t.Errorf("group = %d, want %d (the file's, which the worker belongs to)", st.Gid, shared)
	}
	if fi.Mode().Perm() != 0o664 {
		t.Errorf("mode = %v, want 0664", fi.Mode())
	}
}
