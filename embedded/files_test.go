package embedded_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/ostest"
)

// TestConfigFilesBounded: the files a server configuration includes or
// names (include, TLS certificates, the operator) are read whole by
// nats-server: one that is a named pipe, a directory or too large is
// refused before, naming it, instead of hanging or filling memory.
func TestConfigFilesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := ostest.Mkfifo(t, fifo, 0o600); err != nil {
		t.Skip("no named pipes:", err)
	}
	big := filepath.Join(dir, "big.conf")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", 2<<20)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "nested.conf")
	if err := os.WriteFile(nested, []byte("include 'fifo'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(dir, "loop.conf")
	if err := os.WriteFile(loop, []byte("include loop.conf\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, conf, want string }{
		{"include of a named pipe", "port: 4222\ninclude 'fifo'\n", "fifo"},
		{"include inside a block", "authorization {\n  include \"fifo\"\n}\n", "fifo"},
		{"include of an include", "INCLUDE ./nested.conf\n", "fifo"},
		{"include too large", "include big.conf\n", "big.conf"},
		{"include of a directory", "include ./\n", "directory"},
		{"includes in a loop", "include loop.conf\n", "loop.conf"},
		{"certificate", "tls {\n  cert_file: \"" + fifo + "\"\n  key_file: \"" + fifo + "\"\n}\n", "fifo"},
		{"operator", "operator: " + fifo + "\n", "fifo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "server.conf")
			if err := os.WriteFile(file, []byte(tc.conf), 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				_, _, err := embedded.FileDefaults(file)
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("FileDefaults = %v, want an error naming %q", err, tc.want)
				}
			case <-time.After(30 * time.Second):
				// Let the reader go: open the pipe's other end.
				if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
					f.Close()
				}
				t.Fatal("FileDefaults still reading after 30s")
			}
		})
	}
}
