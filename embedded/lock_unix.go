//go:build unix

package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/toolbus/toolbus/internal/regularfile"
)

// lockFile is the file in a store directory that the server using it
// holds locked.
const lockFile = "toolbus.lock"

// lockStore takes the store directory for this process (an exclusive
// flock of dir/toolbus.lock, holding its pid), or says which process has
// it. The kernel releases the lock with the process, so a killed server
// leaves none behind.
func lockStore(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("embedded: JetStream store: %w", err)
	}
	path := filepath.Join(dir, lockFile)
	// Without blocking, and only a regular file: a named pipe or a
	// device there would hang, or never end, the read of the pid below.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: JetStream store %s is not usable: %w", dir, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is %s, not a regular file: remove it", path, regularfile.Kind(st.Mode()))
		}
		return nil, fmt.Errorf("embedded: JetStream store %s is not usable: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		b := make([]byte, 32) // a pid and a newline
		if n, _ := f.ReadAt(b, 0); n > 0 {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b[:n]))); perr == nil {
				holder = fmt.Sprintf(" (pid %d)", pid)
			}
		}
		f.Close()
		return nil, storeInUseError(fmt.Sprintf("embedded: JetStream store %s is in use by another server%s: give each server its own store directory, or join the running one", dir, holder))
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// storeInUseError says which store is taken, and is ErrStoreInUse.
type storeInUseError string

func (e storeInUseError) Error() string        { return string(e) }
func (e storeInUseError) Is(target error) bool { return target == ErrStoreInUse }
