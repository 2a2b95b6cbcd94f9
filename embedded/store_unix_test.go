//go:build unix

package embedded

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/ostest"
)

// TestStoreDirInUse: two servers on one JetStream store directory would
// write the same stream files (each the other's corruption). The second
// Start is refused, naming the directory; once the first is shut down
// (or killed: the lock goes with the process) the store starts again.
// Both servers started, each on its own port.
func TestStoreDirInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	first, err := Start(&Options{Listen: "127.0.0.1:0", StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Start(&Options{Listen: "127.0.0.1:0", StoreDir: dir})
	if err == nil {
		second.Shutdown()
		first.Shutdown()
		t.Fatalf("a second server started on the store directory %s of a running one", dir)
	}
	if !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "in use") {
		t.Errorf("the refusal does not say the store is in use: %v", err)
	}
	first.Shutdown()
	again, err := Start(&Options{Listen: "127.0.0.1:0", StoreDir: dir})
	if err != nil {
		t.Fatalf("the store after the first server's shutdown: %v", err)
	}
	again.Shutdown()
}

// TestStoreLockNotARegularFile: a store directory whose toolbus.lock is
// a named pipe or a device is refused at once, naming it. A second
// server on a store whose lock was a named pipe hung reading the pid of
// the first from it, and on one whose lock led to /dev/zero read it
// without end.
func TestStoreLockNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, lockFile)
	if err := ostest.Mkfifo(t, lock, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	first, err := lockStore(dir)
	if err == nil {
		defer first.Close()
		// A second server once the first holds the lock.
		done := make(chan error, 1)
		go func() {
			f, err := lockStore(dir)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err = <-done:
		case <-time.After(time.Minute): // a guard: it returns at once
			t.Fatalf("the second server still reads %s after a minute", lock)
		}
	}
	if err == nil || !strings.Contains(err.Error(), "a named pipe (FIFO), not a regular file") || !strings.Contains(err.Error(), lock) {
		t.Fatalf("a store whose lock is a FIFO: %v, want an error naming %s a named pipe", err, lock)
	}
}
