//go:build linux

package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolbus/toolbus/toolkit"
)

// TestEditOfFileLockedByAProgram: edits take a lock on their file to
// keep the other workers' edits (TestSharedWorkspaceEditsKeepEachOther),
// so a program holding a lock on it (a whole-file fcntl lock around a
// long job, here) would hold every edit of the file for as long as the
// call may last.
// An edit waits sharedLockWait for it, then fails saying why, the file
// as it was; once the program lets go, edits go through.
func TestEditOfFileLockedByAProgram(t *testing.T) {
	defer func(d time.Duration) { sharedLockWait = d }(sharedLockWait)
	sharedLockWait = 50 * time.Millisecond
	ws, err := openWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws.real, "f.txt")
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &files{ws: ws, maxFile: DefaultMaxFileBytes, maxOutput: DefaultMaxOutputBytes}
	held, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.FcntlFlock(held.Fd(), unix.F_SETLK, &unix.Flock_t{Type: unix.F_WRLCK}); err != nil {
		t.Skipf("no locks here: %v", err)
	}
	_, err = f.insert(context.Background(), insertInput{FilePath: "f.txt", Content: "x", LineNumber: 1})
	var te *toolkit.Error
	if !errors.As(err, &te) || te.Code != toolkit.CodeUnavailable {
		t.Fatalf("edit of a locked file: %v, want FileBusyError (unavailable)", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "a\n" {
		t.Errorf("f.txt is %q after the refused edit", got)
	}
	held.Close()
	if _, err := f.insert(context.Background(), insertInput{FilePath: "f.txt", Content: "x", LineNumber: 1}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "x\na\n" {
		t.Errorf("f.txt is %q", got)
	}
}

// TestEditWhereLockedFileNeverMatches: an edit locks its file and then
// checks that the path still names it (an edit that held the lock may
// have put a new file there); a file system that gives one file another
// identity at each look (some FUSE mounts) never matched, and the edit
// locked again until its call's context ended, for ever without a
// deadline. After a bounded number of tries the edit goes on without
// the lock, as on a file system without locks.
func TestEditWhereLockedFileNeverMatches(t *testing.T) {
	defer func(f func(a, b os.FileInfo) bool) { sameFile = f }(sameFile)
	sameFile = func(a, b os.FileInfo) bool { return false }
	ws, err := openWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ws.real, "f.txt")
	if err := os.WriteFile(path, []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &files{ws: ws, maxFile: DefaultMaxFileBytes, maxOutput: DefaultMaxOutputBytes}
	// A guard, not a measure: the edit needs no time it could run out of.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := f.insert(ctx, insertInput{FilePath: "f.txt", Content: "x", LineNumber: 1}); err != nil {
		t.Fatalf("edit: %v", err)
	}
	if got, _ := os.ReadFile(path); string(got) != "x\na\n" {
		t.Errorf("f.txt is %q", got)
	}
}
