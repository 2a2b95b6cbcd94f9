package builtin

import (
	"errors"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// An edit puts a new file in the place of the old one (replace.go), so
// the old file's extended attributes, its POSIX ACLs among them, are
// copied to the new one first. The security namespace is left to the
// system, which labels a new file itself. Where an attribute cannot be
// read or set, or they are more than maxXattrBytes, the file is rewritten
// in place instead (inPlace), which keeps them all.

// maxXattrBytes bounds the attributes an edit copies; a file with more is
// rewritten in place.
const maxXattrBytes = 1 << 20

// errXattrs says a file's extended attributes could not be carried over
// to its replacement: it is rewritten in place (refused).
var errXattrs = errors.New("the file's extended attributes cannot be copied")

type xattr struct {
	name  string
	value []byte
}

// readXattrs reads file's extended attributes but those of the security
// namespace. A file system without them has none.
func readXattrs(file *os.File) ([]xattr, error) {
	rc, err := file.SyscallConn()
	if err != nil {
		return nil, err
	}
	var attrs []xattr
	var aerr error
	err = rc.Control(func(fd uintptr) {
		attrs, aerr = fdXattrs(int(fd))
	})
	return attrs, errors.Join(err, aerr)
}

func fdXattrs(fd int) ([]xattr, error) {
	size, err := unix.Flistxattr(fd, nil)
	switch {
	case errors.Is(err, unix.ENOTSUP):
		return nil, nil
	case err != nil:
		return nil, errXattrs
	case size == 0:
		return nil, nil
	case size > maxXattrBytes:
		return nil, errXattrs
	}
	list := make([]byte, size)
	if size, err = unix.Flistxattr(fd, list); err != nil { // ERANGE: one was added meanwhile
		return nil, errXattrs
	}
	var attrs []xattr
	total := size
	for name := range strings.SplitSeq(strings.TrimSuffix(string(list[:size]), "\x00"), "\x00") {
		if name == "" || strings.HasPrefix(name, "security.") {
			continue
		}
		n, err := unix.Fgetxattr(fd, name, nil)
		if errors.Is(err, unix.ENODATA) {
			continue // removed meanwhile
		}
		if err != nil || total+n > maxXattrBytes {
			return nil, errXattrs
		}
		value := make([]byte, n)
		if n, err = unix.Fgetxattr(fd, name, value); err != nil {
			return nil, errXattrs
		}
		total += n
		attrs = append(attrs, xattr{name, value[:n]})
	}
	return attrs, nil
}

// setXattrs gives file, new, the attributes attrs and no others of its
// own: a file made in a directory with a default ACL inherits it as its
// access ACL, which the file it replaces may not have (made before the
// directory had one, or stripped of it to keep it private), and an edit
// must not widen who may use the file. The security namespace is the
// system's, and left alone.
func setXattrs(file *os.File, attrs []xattr) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Control(func(fd uintptr) {
		inherited, err := fdXattrNames(int(fd))
		if err != nil {
			serr = err
			return
		}
		for _, name := range inherited {
			if !slices.ContainsFunc(attrs, func(a xattr) bool { return a.name == name }) && unix.Fremovexattr(int(fd), name) != nil {
				serr = errXattrs
				return
			}
		}
		for _, a := range attrs {
			if unix.Fsetxattr(int(fd), a.name, a.value, 0) != nil {
				serr = errXattrs
				return
			}
		}
	})
	return errors.Join(err, serr)
}

// fdXattrNames lists the names of fd's extended attributes, but those of
// the security namespace. A file system without them has none.
func fdXattrNames(fd int) ([]string, error) {
	size, err := unix.Flistxattr(fd, nil)
	switch {
	case errors.Is(err, unix.ENOTSUP):
		return nil, nil
	case err != nil || size > maxXattrBytes:
		return nil, errXattrs
	case size == 0:
		return nil, nil
	}
	list := make([]byte, size)
	if size, err = unix.Flistxattr(fd, list); err != nil {
		return nil, errXattrs
	}
	var names []string
	for name := range strings.SplitSeq(strings.TrimSuffix(string(list[:size]), "\x00"), "\x00") {
		if name != "" && !strings.HasPrefix(name, "security.") {
			names = append(names, name)
		}
	}
	return names, nil
}
