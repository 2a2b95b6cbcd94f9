package embedded

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// TestStoreUnusable: JetStream cannot create its store (here the
// store's jetstream directory is a file). Start says why at once; it
// waited out its ready timeout (10s) and said only that the server was
// not ready for connections.
func TestStoreUnusable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jetstream"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s, err := Start(&Options{StoreDir: dir, ReadyTimeout: time.Minute})
	if err == nil {
		s.Shutdown()
		t.Fatal("started on an unusable store")
	}
	if !strings.Contains(err.Error(), "JetStream") || !strings.Contains(err.Error(), dir) {
		t.Errorf("the error does not say why JetStream did not start: %v", err)
	}
	// Generous: the bound is the ready timeout, which Start must not wait out.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Start took %v to fail (ready timeout 1m)", d)
	}
}

// TestShutdownConcurrent: Server's methods are safe for concurrent use,
// Shutdown included; a second Shutdown (at once or later) is harmless.
func TestShutdownConcurrent(t *testing.T) {
	s, err := Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := s.StoreDir()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); s.Shutdown() }()
	}
	wg.Wait()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("temporary store %s still there after Shutdown: %v", dir, err)
	}
	s.Shutdown()
}

// TestStoreLockNotARegularFile: a store directory whose toolbus.lock is
// a named pipe or a device is refused at once, naming it. A second
// server on a store whose lock was a named pipe hung reading the pid of
// the first from it, and on one whose lock led to /dev/zero read it
// without end.
func TestStoreLockNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, lockFile)
	if err := syscall.Mkfifo(lock, 0o600); err != nil {
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
