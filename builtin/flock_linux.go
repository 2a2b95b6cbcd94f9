package builtin

import "golang.org/x/sys/unix"

// lockFile tries to take an exclusive open file description lock on the
// whole file fd, opened for writing, without waiting: EAGAIN or EACCES
// while another holds one.
func lockFile(fd int) error {
	return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0})
}
