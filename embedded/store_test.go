package embedded

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

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
