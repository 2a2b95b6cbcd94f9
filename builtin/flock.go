package builtin

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// The workers of a shared workspace (Config.SharedWorkspace, one volume
// for the fleet) edit the same files, and fileLocks orders only one
// worker's edits. An edit therefore also takes an exclusive lock on the
// file it changes, which every worker's edits take: the one that waited
// reads the file only once the other's edit is in place. Since an edit
// puts a new file in the old one's place, a lock won on a file its path
// no longer names (replaced meanwhile by the edit that held it) is let
// go, and the new file locked. On Linux the lock is an open file
// description lock (F_OFD_SETLK) on the whole file, which an NFS client
// takes on the server, so workers on different machines keep each other
// too; elsewhere a flock. The file is opened for writing to lock it (a
// write lock needs it); one the worker may not open so, or a file
// system without such locks, leaves the edits of different workers
// unordered, as commands' changes always are.
//
// An edit holds its lock for as long as it takes to read and write one
// file. A lock held much longer is another program's (one that locks
// the file around a long job): an edit that waited sharedLockWait for it
// fails, saying so, rather than waiting as long as the call may, or for
// ever.

// sharedLockWait is how long an edit waits for another's lock on its
// file (a variable for tests).
var sharedLockWait = 30 * time.Second

// errLocked says the file stayed locked by another for sharedLockWait.
var errLocked = errors.New("locked")

// lockShared waits for the other workers' edits of the existing regular
// file rel, or for ctx to end, and returns the function that lets the
// next one go. A path that names no regular file has nothing to lock:
// the edit finds out what it is.
func lockShared(ctx context.Context, root *os.Root, rel string) (unlock func(), err error) {
	none := func() {}
	tries := 0
	for {
		if fi, err := root.Stat(rel); err != nil || !fi.Mode().IsRegular() {
			return none, nil
		}
		// Without blocking: a named pipe swapped in is not waited on.
		f, err := root.OpenFile(rel, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return none, nil // not writable: the edit says why, or makes it unordered
		}
		held, err := f.Stat()
		if err != nil || !held.Mode().IsRegular() {
			f.Close()
			return none, nil
		}
		if err := flockWait(ctx, f); err != nil {
			f.Close()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, errLocked) {
				return nil, err
			}
			return none, nil // no locks here
		}
		if now, err := root.Stat(rel); err == nil && sameFile(held, now) {
			return func() { f.Close() }, nil // closing lets the lock go
		}
		f.Close() // replaced by the edit that held it: lock the new file
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if tries++; tries == sharedLockTries {
			// A file system giving one file another identity at each
			// look (some FUSE mounts) never matches: as one without locks.
			return none, nil
		}
	}
}

// sharedLockTries bounds how many times lockShared locks a file its path
// no longer names and tries again; each try waited for an edit that
// replaced the file, so only a file system whose files never match
// their path's (or a program replacing the file without end) reaches it.
const sharedLockTries = 64

// sameFile is os.SameFile (a variable for tests).
var sameFile = os.SameFile

// flockWait takes an exclusive lock on f (lockFile), waiting while
// another holds it (polled, so the wait ends with ctx) for
// sharedLockWait at most (errLocked), and fails when the file system
// has none.
func flockWait(ctx context.Context, f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	wait := time.Millisecond
	deadline := time.Now().Add(sharedLockWait)
	for {
		var lerr error
		if err := rc.Control(func(fd uintptr) {
			for {
				if lerr = lockFile(int(fd)); lerr != syscall.EINTR {
					return
				}
			}
		}); err != nil {
			return err
		}
		if !errors.Is(lerr, syscall.EWOULDBLOCK) && !errors.Is(lerr, syscall.EAGAIN) && !errors.Is(lerr, syscall.EACCES) {
			return lerr
		}
		if time.Now().After(deadline) {
			return errLocked
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}
