package regularfile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/internal/regularfile"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := ostest.Mkfifo(t, fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if b, err := regularfile.Read(ok, 5); err != nil || string(b) != "hello" {
		t.Fatalf("a file at the limit: %q, %v", b, err)
	}
	for _, tt := range []struct {
		path  string
		limit int64
		want  string
	}{
		{ok, 4, "5 bytes, over the limit of 4"},
		{dir, 10, "is a directory"},
		{fifo, 10, "a named pipe (FIFO), not a regular file: give the path of a regular file"}, // at once: no writer is waited for
		{"/dev/zero", 10, "a character device, not a regular file: give the path of a regular file"},
		{filepath.Join(dir, "missing"), 10, "no such file"},
	} {
		if _, err := regularfile.Read(tt.path, tt.limit); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%s): %v, want %q", tt.path, err, tt.want)
		}
	}
}

func TestReadIn(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{"in": "ok", "out": "/etc/hostname", "up": "../x"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if b, err := regularfile.ReadIn(root, "in", 5); err != nil || string(b) != "hello" {
		t.Fatalf("a link inside: %q, %v", b, err)
	}
	for _, name := range []string{"out", "up", "../ok", "/etc/hostname"} {
		if b, err := regularfile.ReadIn(root, name, 10); err == nil {
			t.Errorf("ReadIn(%s) = %q, want an error", name, b)
		}
	}
}

// A socket is not opened at all (open fails with "no such device or
// address"): the error still says what the file is.
func TestReadSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "sock")
	l, err := ostest.ListenUnix(t, sock)
	if err != nil {
		t.Skip("no unix sockets here:", err)
	}
	defer l.Close()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	want := "a socket, not a regular file: give the path of a regular file"
	if _, err := regularfile.Read(sock, 10); err == nil || err.Error() != want {
		t.Errorf("Read: %v, want %q", err, want)
	}
	if _, err := regularfile.ReadIn(root, "sock", 10); err == nil || err.Error() != want {
		t.Errorf("ReadIn: %v, want %q", err, want)
	}
}
