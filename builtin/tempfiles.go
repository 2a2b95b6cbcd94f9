package builtin

import (
	"crypto/rand"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// An edit writes its new content to a temporary file beside the file
// (writeTemp) and puts it in place. A worker killed in between (out of
// memory, a deploy) leaves the temporary file behind, in the user's
// directory. So that it does not stay there for good, an edit holds a
// lock on its temporary file while it lasts (the lock of lockFile, on a
// second open file description, so the file it writes through can be
// closed and its error seen before the rename), and a later edit in the
// directory (sweepTemps) removes the files that are named as
// temporary files are, are regular files, are locked by no one and
// have not changed for staleTempAge: what a killed edit left. The age
// also covers a file system without locks, and an edit of an older
// worker, which took none. A name is looked at, not trusted: a symbolic
// link or a directory named so stays, and so does every other file.

// tempPrefix and tempSuffix surround the 26 letters of rand.Text in the
// name of an edit's temporary file.
const (
	tempPrefix = ".toolbus-"
	tempSuffix = ".tmp"
)

// staleTempAge is how long a temporary file must be unchanged, and
// unlocked, to be taken for a killed edit's; also how often a worker
// looks for them in a directory (a variable for tests).
var staleTempAge = 15 * time.Minute

// tempName is a new name for a temporary file in dir.
func tempName(dir string) string {
	return filepath.Join(dir, tempPrefix+rand.Text()+tempSuffix)
}

// isTempName reports whether name is one tempName makes.
func isTempName(name string) bool {
	mid, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return false
	}
	if mid, ok = strings.CutSuffix(mid, tempSuffix); !ok || len(mid) != 26 {
		return false
	}
	for _, c := range []byte(mid) {
		if (c < 'A' || c > 'Z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// holdTemp opens the temporary file tmp, just made, a second time and
// locks it, telling sweepTemps it is in use until the edit closes what
// it returns. nil where it cannot be opened or locked: then only its
// age keeps it.
func holdTemp(root *os.Root, tmp string) *os.File {
	f, err := root.OpenFile(tmp, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	rc, err := f.SyscallConn()
	var lerr error
	if err == nil {
		err = rc.Control(func(fd uintptr) { lerr = lockFile(int(fd)) })
	}
	if err != nil || lerr != nil {
		f.Close()
		return nil
	}
	return f
}

// sweeps remembers when this worker last looked for stale temporary
// files in each directory, so that an edit reads its directory once per
// staleTempAge at most.
type sweeps struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// maxSweeps bounds the directories sweeps remembers; past it, it
// forgets them all (and looks again at the next edit in each).
const maxSweeps = 4096

// due reports whether the directory dir (a real path) is to be looked
// at now, and if so notes it.
func (s *sweeps) due(dir string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.last[dir]; ok && now.Sub(t) < staleTempAge && now.After(t) {
		return false
	}
	if s.last == nil || len(s.last) >= maxSweeps {
		s.last = map[string]time.Time{}
	}
	s.last[dir] = now
	return true
}

// sweepTemps removes the stale temporary files of dir, in root, where
// it is due: what killed edits left there.
func (s *sweeps) sweepTemps(root *os.Root, real, dir string) {
	now := time.Now()
	if !s.due(filepath.Join(real, dir), now) {
		return
	}
	sub, err := root.OpenRoot(dirOnly(dir))
	if err != nil {
		return
	}
	defer sub.Close()
	d, err := sub.OpenFile(".", openDir, 0)
	if err != nil {
		return
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			if isTempName(name) {
				removeStale(sub, name, now)
			}
		}
		if err != nil {
			return
		}
	}
}

// removeStale removes the temporary file name of dir if it is a regular
// file that no one holds (its lock is free) and that has not changed for
// staleTempAge. Its lock is held while it is removed, so an edit cannot
// take it meanwhile.
func removeStale(dir *os.Root, name string, now time.Time) {
	fi, err := dir.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return
	}
	defer f.Close()
	held, err := f.Stat()
	if err != nil || !held.Mode().IsRegular() || !os.SameFile(fi, held) {
		return
	}
	rc, err := f.SyscallConn()
	var lerr error
	if err == nil {
		err = rc.Control(func(fd uintptr) { lerr = probeLock(int(fd)) })
	}
	if err != nil || lerr != nil || now.Sub(changed(held)) < staleTempAge {
		return // in use, or no locks to tell, or too young
	}
	if again, err := dir.Lstat(name); err != nil || !os.SameFile(again, held) {
		return
	}
	_ = dir.Remove(name)
}

// changed is when fi's file last changed: its inode's change time where
// the system gives it (which no one can set back), else its modification
// time.
func changed(fi fs.FileInfo) time.Time {
	if t, ok := changeTime(fi); ok {
		return t
	}
	return fi.ModTime()
}
