package builtin

import (
	"errors"
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
	flags, _ := fileFlags(file)
	return flags
}

// fileFlags reads file's inode flags; false where the file system keeps
// none or they cannot be read.
func fileFlags(file *os.File) (uint32, bool) {
	rc, err := file.SyscallConn()
	if err != nil {
		return 0, false
	}
	var flags uint32
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		flags, ferr = unix.IoctlGetUint32(int(fd), unix.FS_IOC_GETFLAGS)
	}); err != nil || ferr != nil {
		return 0, false
	}
	return flags, true
}

// keptFlags are the inode flags an edit carries from a file to the one
// that replaces it: those a file's owner may set (chattr s, u, c, S, d,
// A, m, C). The others are the file system's own (extents, inline
// data, ...) or need privilege (i, a, j), and a file with i or a is
// not replaced at all.
const keptFlags = 0x1 | 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x400 | 0x800000

// errFlags says a file's inode flags could not be carried over to its
// replacement: it is rewritten in place (refused), which keeps them.
var errFlags = errors.New("the file's inode flags cannot be copied")

// setKeptFlags gives file, new and still empty (compression and
// copy-on-write must be chosen before any data), the keptFlags of want
// and no others of them: not those it took from its directory that the
// file it replaces does not have. A file system that refuses them, or
// keeps none while want has some, fails with errFlags.
func setKeptFlags(file *os.File, want uint32) error {
	have, ok := fileFlags(file)
	switch {
	case !ok && want&keptFlags == 0:
		return nil
	case !ok:
		return errFlags
	case have&keptFlags == want&keptFlags:
		return nil
	}
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.IoctlSetPointerInt(int(fd), unix.FS_IOC_SETFLAGS, int(have&^keptFlags|want&keptFlags))
	}); err != nil {
		return err
	}
	if serr != nil {
		return errFlags
	}
	if got, ok := fileFlags(file); !ok || got&keptFlags != want&keptFlags {
		return errFlags // taken without effect
	}
	return nil
}
