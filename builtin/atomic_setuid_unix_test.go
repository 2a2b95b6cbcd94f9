//go:build unix

package builtin_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/builtin"
)

// editSetuidEnv names the workspace a child of
// TestEditOfAnotherUsersSetuidFile edits, as an unprivileged user.
const editSetuidEnv = "TOOLBUS_TEST_EDIT_SETUID"

// TestEditOfAnotherUsersSetuidFile: a worker that is not root edits a
// set-user-ID (and set-group-ID) program of another user that it may
// write. The new copy is the worker's, as it cannot give it away, and
// must not keep those bits: whoever ran it would run it as the worker,
// with the worker's files, where the kernel drops them when a non-owner
// writes the file in place. The worker's own set-user-ID file keeps its
// mode.
func TestEditOfAnotherUsersSetuidFile(t *testing.T) {
	if ws := os.Getenv(editSetuidEnv); ws != "" {
		tk, _ := fileKit(t, builtin.Config{Workspace: ws})
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("theirs", map[string]any{"content": "#!/bin/sh\nid\n"})))
		mine := filepath.Join(ws, "mine")
		writeFile(t, mine, "old\n")
		if err := os.Chmod(mine, fs.ModeSetuid|0o755); err != nil {
			t.Fatal(err)
		}
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("mine", map[string]any{"content": "new\n"})))
		if fi, err := os.Stat(mine); err != nil || fi.Mode() != fs.ModeSetuid|0o755 {
			t.Errorf("the worker's own set-user-ID file: %v %v, want -rwsr-xr-x", fi.Mode(), err)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the edit as another user")
	}
	const owner, worker = 65533, 65534
	ws := t.TempDir()
	path := filepath.Join(ws, "theirs")
	writeFile(t, path, "#!/bin/sh\necho hi\n")
	if err := os.Chown(path, owner, owner); err != nil {
		t.Skipf("cannot give the file away here: %v", err)
	}
	if err := os.Chmod(path, fs.ModeSetuid|fs.ModeSetgid|0o777); err != nil {
		t.Fatal(err)
	}
	asUser(t, "TestEditOfAnotherUsersSetuidFile", editSetuidEnv, ws, worker)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "#!/bin/sh\nid\n" {
		t.Fatalf("content %q, want the edit", got)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid == owner {
		t.Fatalf("the worker gave the file to its owner %d", owner)
	}
	if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
		t.Errorf("mode %v, owner %d: the copy of another user's set-user-ID file keeps the bits", fi.Mode(), st.Uid)
	}
	if fi.Mode().Perm() != 0o777 {
		t.Errorf("mode %v, want the permissions 0777 kept", fi.Mode())
	}
}
