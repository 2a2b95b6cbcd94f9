package embedded

import (
	"path/filepath"
	"strings"
	"testing"
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
