//go:build unix

package builtin_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// fileSizeLimitEnv marks the child process TestFailedWriteLeavesFileUntouched
// runs its body in (ostest.InChild). The file size limit is the whole
// process's: set in the test binary go test runs, it also held the log
// go test has the binary write (-test.testlogfile, for its cache), and a
// flush of that log while the limit held failed the package ("can't
// write testlog.txt: file too large") when earlier tests had grown the
// log past the limit, which depended on the length of the temporary
// directory's name.
const fileSizeLimitEnv = "TOOLBUS_TEST_FSIZE_CHILD"

// withFileSizeLimit runs fn with the process's file size limit
// (RLIMIT_FSIZE) at n bytes: a write past it fails with EFBIG, as one
// on a full disk fails with ENOSPC. Only the child ostest.InChild
// starts with fileSizeLimitEnv may call it.
func withFileSizeLimit(t *testing.T, n uint64, fn func()) {
	t.Helper()
	if os.Getenv(fileSizeLimitEnv) == "" {
		t.Fatal("withFileSizeLimit outside its child process")
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("no file size limit here: %v", err)
	}
	lim := old
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skipf("cannot set the file size limit: %v", err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatalf("restoring the file size limit: %v", err)
		}
	}()
	fn()
}

// TestFailedWriteLeavesFileUntouched: an edit that cannot be written in
// full (here the file size limit; a full disk alike) fails, and leaves
// the file as it was and no temporary file behind; a file being created
// is not created.
func TestFailedWriteLeavesFileUntouched(t *testing.T) {
	if !ostest.InChild(t, fileSizeLimitEnv) {
		return
	}
	const limit = 64 << 10
	big := strings.Repeat("x\n", limit)
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, "1\n2\n3\n")
			in := editInput("f.txt", e.input)
			in["content"] = big
			var r *toolkit.Response
			withFileSizeLimit(t, limit, func() { r = invoke(t, tk, e.tool, in) })
			wantCode(t, r, toolkit.CodeToolError, `"f.txt"`)
			if got := readFile(t, path); got != "1\n2\n3\n" {
				t.Errorf("after a failed %s the file is %d bytes starting %.20q, want it untouched", e.name, len(got), got)
			}
			if got := entries(t, ws); !slices.Equal(got, []string{"f.txt"}) {
				t.Errorf("the workspace holds %q, want only f.txt", got)
			}
		})
	}
	t.Run("create", func(t *testing.T) {
		tk, ws := fileKit(t, builtin.Config{})
		var r *toolkit.Response
		withFileSizeLimit(t, limit, func() {
			r = invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "new.txt", "content": big})
		})
		wantCode(t, r, toolkit.CodeToolError, `"new.txt"`)
		if got := entries(t, ws); len(got) != 0 {
			t.Errorf("the workspace holds %q after a failed create, want nothing", got)
		}
	})
}

// TestEditKeepsOwner: a worker running as root edits a user's file, and
// the file stays the user's.
func TestEditKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root may give a file away")
	}
	const uid, gid = 65534, 65534
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, "1\n2\n3\n")
			if err := os.Chown(path, uid, gid); err != nil {
				t.Skipf("cannot give the file away here: %v", err)
			}
			if err := os.Chmod(path, 0o755|fs.ModeSetgid); err != nil {
				t.Fatal(err)
			}
			wantOK(t, invoke(t, tk, e.tool, editInput("f.txt", e.input)))
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if st.Uid != uid || st.Gid != gid {
				t.Errorf("owner = %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
			}
			if want := 0o755 | fs.ModeSetgid; fi.Mode() != want {
				t.Errorf("mode = %v, want %v", fi.Mode(), want)
			}
		})
	}
}
