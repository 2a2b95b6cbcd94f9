package builtin

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives file the blocks of its first n bytes, growing it to n
// bytes when shorter, so that writing them cannot then fail for want of
// room (a full disk, a quota, the process's file size limit). A file
// system that cannot allocate ahead (errNoReserve) is written without.
func allocate(file *os.File, n int64) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	err = rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Fallocate(int(fd), 0, 0, n)
			if ferr != unix.EINTR {
				return
			}
		}
	})
	if errors.Is(ferr, unix.EOPNOTSUPP) || errors.Is(ferr, unix.ENOSYS) {
		return errNoReserve
	}
	return errors.Join(err, ferr)
}
