//go:build unix

package builtin_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// inPlaceFullEnv names the workspace a child of
// TestInPlaceEditWithoutRoomKeepsFile edits, as an unprivileged user.
const inPlaceFullEnv = "TOOLBUS_TEST_INPLACE_FULL"

// TestInPlaceEditWithoutRoomKeepsFile: an edit the directory refuses to
// replace (here not writable by the worker) rewrites the file in place,
// and that rewrite truncated the file before writing the new content:
// when the file system had no room for it (a full disk, a quota, the
// process's file size limit, which stands in for them here), the call
// failed with the file cut to what fitted, its old content lost. The
// room is now taken before the file is touched: the call fails saying
// nothing was written, and the file is as it was.
func TestInPlaceEditWithoutRoomKeepsFile(t *testing.T) {
	const old = "1\n2\n3\n"
	big := strings.Repeat("new line\n", 100)
	if ws := os.Getenv(inPlaceFullEnv); ws != "" {
		tk, _ := fileKit(t, builtin.Config{Workspace: ws})
		// A file of 64 bytes at most: the edits do not fit.
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 64, Max: 64}); err != nil {
			t.Fatal(err)
		}
		for _, in := range []struct {
			tool string
			in   map[string]any
		}{
			{builtin.WriteTextFile, map[string]any{"content": big}},
			{builtin.WriteTextFile, map[string]any{"content": big, "ranges": []any{2, 2}}},
			{builtin.InsertTextFile, map[string]any{"content": big, "line_number": 1}},
		} {
			r := invoke(t, tk, in.tool, editInput("ro/f.txt", in.in))
			wantCode(t, r, toolkit.CodeToolError, "ro/f.txt", "Nothing was written")
			if got := readFile(t, filepath.Join(ws, "ro", "f.txt")); got != old {
				t.Fatalf("%s %v failed leaving the file %d bytes: %.40q, want it as it was", in.tool, in.in["ranges"], len(got), got)
			}
		}
		// An edit that fits is still made in place.
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("ro/f.txt", map[string]any{"content": "two\n", "ranges": []any{2, 2}})))
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the edit as another user")
	}
	const worker = 65534
	ws := t.TempDir()
	dir := filepath.Join(ws, "ro")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f.txt")
	writeFile(t, path, old)
	if err := os.Chown(path, worker, worker); err != nil {
		t.Skipf("cannot give the file away here: %v", err)
	}
	asUser(t, "TestInPlaceEditWithoutRoomKeepsFile", inPlaceFullEnv, ws, worker)
	if got := readFile(t, path); got != "1\ntwo\n3\n" {
		t.Errorf("file = %q, want the edit that fitted", got)
	}
	if got := entries(t, dir); len(got) != 1 || got[0] != "f.txt" {
		t.Errorf("the directory holds %q, want only f.txt", got)
	}
}
