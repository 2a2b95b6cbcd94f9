package builtin

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// inodeFlags reads the inode flags (chattr's) of name in root: 0 where
// the file system keeps none or they cannot be read.
func inodeFlags(root *os.Root, name string) uint32 {
	file, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0
	}
	defer file.Close()
	rc, err := file.SyscallConn()
	if err != nil {
		return 0
	}
	var flags uint32
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		flags, ferr = unix.IoctlGetUint32(int(fd), unix.FS_IOC_GETFLAGS)
	}); err != nil || ferr != nil {
		return 0
	}
	return flags
}
