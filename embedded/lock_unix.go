//go:build unix

package embedded

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: JetStream store %s is not usable: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := ""
		if b, rerr := os.ReadFile(path); rerr == nil {
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
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
