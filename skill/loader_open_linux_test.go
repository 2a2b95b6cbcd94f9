package skill

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A SKILL.md that is not a regular file (a FIFO, a device) is refused
// without being opened: opening a FIFO releases a writer waiting for a
// reader, and opening a device runs its driver (a terminal may become
// the worker's), on every load, which every query runs. Opens are seen
// through inotify, which queues the event before open returns.
func TestLoaderDoesNotOpenOddFiles(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "pipe", FileName)
	if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pipe/"+FileName, filepath.Join(root, FileName)); err != nil { // a link inside to it
		t.Fatal(err)
	}
	in, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skip("no inotify:", err)
	}
	defer syscall.Close(in)
	if _, err := syscall.InotifyAddWatch(in, fifo, syscall.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	l := NewLoader(root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)})
	for range 2 {
		_, warns := l.Load()
		if len(warns) != 2 {
			t.Fatalf("warnings %v, want the FIFO refused at the root and in pipe", warns)
		}
		for _, w := range warns {
			if !strings.Contains(w.Reason, "not a regular file") {
				t.Errorf("warning %v", w)
			}
		}
	}
	buf := make([]byte, 4096)
	if n, err := syscall.Read(in, buf); n > 0 {
		t.Fatalf("the loader opened the FIFO (%d bytes of inotify events)", n)
	} else if err != syscall.EAGAIN {
		t.Fatalf("reading inotify: %d, %v", n, err)
	}
}
