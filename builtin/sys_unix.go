//go:build unix

package builtin

import (
	"io/fs"
	"os"
	"syscall"
)

// openDir opens a directory only, without blocking: what was swapped in
// for the directory since is refused rather than waited on (a named
// pipe, for a writer).
const openDir = os.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NONBLOCK

// owner is a file's owner and group.
type owner struct{ Uid, Gid int }

// ownerOf is the owner and group of fi's file.
func ownerOf(fi fs.FileInfo) (owner, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return owner{}, false
	}
	return owner{int(st.Uid), int(st.Gid)}, true
}

// linkCount is the number of hard links of fi's file.
func linkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}

// unsupported names what cfg turns on that this system cannot do: nothing.
func unsupported(Config) []error { return nil }

// killGroup sends SIGKILL to process group pgid.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// reap waits for the members of the killed process group pgid that are
// the worker's children: a worker that is the parent of last resort (PID
// 1 of a container, a subreaper) receives the orphans of its commands,
// and what it does not wait for stays a zombie for as long as it runs.
// Elsewhere the group has no member that is the worker's child (the
// command, its leader, was waited for) and it returns at once.
//
// What left the group (setsid) is not killed and may end at any time
// later: each command's end also reaps those that have ended by then
// (reapOrphans), so they are zombies until the next command ends, not
// for the worker's life; a signal handler reaping at once would need a
// goroutine of the package's own, owned by nobody.
func reap(pgid int) {
	for {
		_, err := syscall.Wait4(-pgid, nil, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil { // ECHILD: none left
			return
		}
	}
}
