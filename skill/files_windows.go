package skill

import (
	"io/fs"
	"os"
	"path"
	"syscall"
)

// Windows has no O_DIRECTORY or O_NOFOLLOW: a directory is opened as a
// file, and os.Root keeps every open inside the skill's directory.
const (
	openDirOnly     = os.O_RDONLY
	openDirNoFollow = os.O_RDONLY
)

// openNoLinks opens the file at parts (names without "." or "..") below
// root for reading, refusing a path of which a name is a link (ELOOP).
// Windows has no open that follows no link, so each name is looked at
// before the open: a link swapped in between is followed, though only
// within root, which os.Root never leaves.
func openNoLinks(root *os.Root, parts []string) (*os.File, error) {
	for i := range parts {
		p := path.Join(parts[:i+1]...)
		fi, err := root.Lstat(p)
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.ELOOP}
		}
	}
	return root.OpenFile(path.Join(parts...), os.O_RDONLY, 0)
}
