// Package regularfile reads the files a user names (a config, a
// SKILL.md) that must be regular files of bounded size: a FIFO with no
// writer must not hang the reader, and /dev/zero must not fill its
// memory.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// Read reads path, which must be a regular file of at most limit bytes.
// It opens without blocking and checks the file before reading; the
// errors say what the file is ("is a directory", "a named pipe (FIFO),
// not a regular file: …", "a socket, …", "N bytes, over the limit of L").
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, unopened(err, func() (fs.FileInfo, error) { return os.Stat(path) })
	}
	return read(f, limit)
}

// ReadIn is Read of name inside root: a name or link that leads out of
// root is an error.
func ReadIn(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, unopened(err, func() (fs.FileInfo, error) { return root.Stat(name) })
	}
	return read(f, limit)
}

// unopened is the error for a file whose open failed with err: what it
// is when it is no regular file (a socket cannot be opened at all, and
// its open says only "no such device or address"), err otherwise.
func unopened(err error, stat func() (fs.FileInfo, error)) error {
	if st, serr := stat(); serr == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return NotRegular(st.Mode())
	}
	return err
}

// Kind names what a file that is not a regular file is, for a person:
// "a named pipe (FIFO)", "a character device", ….
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m.IsRegular():
		return "a regular file"
	}
	return fmt.Sprintf("a special file (%v)", m.Type())
}

// NotRegular is the error for a file of mode m that should have been a
// regular file: what it is and what to give instead (a pipe such as
// /dev/stdin is not read).
func NotRegular(m fs.FileMode) error {
	return fmt.Errorf("%s, not a regular file: give the path of a regular file", Kind(m))
}

func read(f *os.File, limit int64) ([]byte, error) {
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return nil, err
	case st.IsDir():
		return nil, errors.New("is a directory")
	case !st.Mode().IsRegular():
		return nil, NotRegular(st.Mode())
	case st.Size() > limit:
		return nil, fmt.Errorf("%d bytes, over the limit of %d", st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("over the limit of %d bytes", limit) // it grew since
	}
	return data, err
}
