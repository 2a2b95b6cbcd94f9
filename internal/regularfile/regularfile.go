// Package regularfile reads the files a user names (a config, a
// SKILL.md) that must be regular files of bounded size: a FIFO with no
// writer must not hang the reader, and /dev/zero must not fill its
// memory.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// Read reads path, which must be a regular file of at most limit bytes.
// It opens without blocking and checks the file before reading; the
// errors say what the file is ("is a directory", "not a regular file
// (p---------)", "N bytes, over the limit of L").
func Read(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return read(f, limit)
}

// ReadIn is Read of name inside root: a name or link that leads out of
// root is an error.
func ReadIn(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return read(f, limit)
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
		return nil, fmt.Errorf("not a regular file (%v)", st.Mode().Type())
	case st.Size() > limit:
		return nil, fmt.Errorf("%d bytes, over the limit of %d", st.Size(), limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("over the limit of %d bytes", limit) // it grew since
	}
	return data, err
}
