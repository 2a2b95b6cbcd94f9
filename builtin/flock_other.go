//go:build unix && !linux

package builtin

import (
	"io/fs"
	"syscall"
	"time"
)

// lockFile tries to take an exclusive flock on fd without waiting:
// EWOULDBLOCK while another holds one.
func lockFile(fd int) error {
	return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
}

// probeLock tries to take a shared flock on fd without waiting:
// EWOULDBLOCK while another holds an exclusive one (lockFile).
func probeLock(fd int) error {
	return syscall.Flock(fd, syscall.LOCK_SH|syscall.LOCK_NB)
}

// changeTime is not read here: the field differs between systems.
func changeTime(fs.FileInfo) (time.Time, bool) { return time.Time{}, false }
