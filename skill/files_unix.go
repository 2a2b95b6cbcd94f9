//go:build unix

package skill

import (
	"io/fs"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"
)

// openDirOnly opens a directory and nothing else (a FIFO put in its
// place is refused at once, not waited on); openDirNoFollow nor a link.
const (
	openDirOnly     = os.O_RDONLY | syscall.O_DIRECTORY
	openDirNoFollow = os.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW
)

// openNoLinks opens the file at parts (names without "." or "..") below
// root for reading, a name at a time, following no link: one swapped in
// since the path was looked at fails the open (ELOOP, or ENOTDIR for a
// directory's name) rather than being followed, also to a place inside
// the skill. The open is non-blocking, so that a FIFO put there does
// not hang it; the caller refuses what is not a regular file.
func openNoLinks(root *os.Root, parts []string) (*os.File, error) {
	dir, err := root.OpenFile(".", os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, err
	}
	var fd int
	var oerr error
	if err := rc.Control(func(at uintptr) {
		fd, oerr = int(at), nil
		for i, part := range parts {
			flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
			if i < len(parts)-1 {
				flags |= unix.O_DIRECTORY
			} else {
				flags |= unix.O_NONBLOCK
			}
			var next int
			for {
				if next, oerr = unix.Openat(fd, part, flags, 0); oerr != unix.EINTR {
					break
				}
			}
			var st unix.Stat_t
			if oerr == unix.ENOTDIR && unix.Fstatat(fd, part, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				oerr = unix.ELOOP // a directory's name, now a link
			}
			if fd != int(at) {
				unix.Close(fd)
			}
			if oerr != nil {
				return
			}
			fd = next
		}
	}); err != nil {
		return nil, err
	}
	if oerr != nil {
		return nil, &fs.PathError{Op: "open", Path: path.Join(parts...), Err: oerr}
	}
	return os.NewFile(uintptr(fd), path.Join(parts...)), nil
}
