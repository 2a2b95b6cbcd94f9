//go:build !linux

package builtin

import "syscall"

// lockFile tries to take an exclusive flock on fd without waiting:
// EWOULDBLOCK while another holds one.
func lockFile(fd int) error {
	return syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB)
}
