package builtin

import (
	"io/fs"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile tries to take an exclusive open file description lock on the
// whole file fd, opened for writing, without waiting: EAGAIN or EACCES
// while another holds one.
func lockFile(fd int) error {
	return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0})
}

// probeLock tries to take a shared open file description lock on the
// whole file fd, opened for reading, without waiting: EAGAIN or EACCES
// while another holds an exclusive one (lockFile).
func probeLock(fd int) error {
	return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: 0, Len: 0})
}

// changeTime is the inode change time of fi's file.
func changeTime(fi fs.FileInfo) (time.Time, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Ctim.Unix()), true
}
