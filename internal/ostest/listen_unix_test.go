//go:build unix

package ostest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/ostest"
)

// TestListenUnixLongPath: a socket whose path is past the room a
// socket's has (107 bytes on Linux) is still made at that path.
func TestListenUnixLongPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sock")
	l, err := ostest.ListenUnix(t, path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fi, err := os.Lstat(path)
	if err != nil || fi.Mode().Type() != fs.ModeSocket {
		t.Fatalf("%s: %v, %v: want a socket there", path, fi, err)
	}
}
