package builtin

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/ostest"
)

// syncDir opens the directory of the file it made durable by its name,
// after the file was put in place: a named pipe swapped in for the
// directory meanwhile blocked that open for ever (waiting for a writer),
// and with it the call, its OS thread and the edits of the file waiting
// behind it. It opens a directory only.
func TestSyncDirDoesNotOpenAPipe(t *testing.T) {
	dir := t.TempDir()
	if err := ostest.Mkfifo(t, filepath.Join(dir, "d"), 0o644); err != nil {
		t.Skip("no named pipes:", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	done := make(chan struct{})
	go func() { syncDir(root, filepath.Join("d", "f.txt")); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		// Unblock the open, so the test can end.
		if w, err := os.OpenFile(filepath.Join(dir, "d"), os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("syncDir still waited for a writer of the named pipe after 30s")
	}
}

// sweepTemps, after an edit, opened the edit's directory as a root by
// its name, which opens whatever is there as a file first: a named pipe
// swapped in for the directory meanwhile held the call for ever, as
// syncDir's open did. It is refused at once, nothing swept.
func TestSweepDoesNotOpenAPipe(t *testing.T) {
	dir := t.TempDir()
	if err := ostest.Mkfifo(t, filepath.Join(dir, "d"), 0o644); err != nil {
		t.Skip("no named pipes:", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	done := make(chan struct{})
	go func() {
		var s sweeps
		s.sweepTemps(root, dir, "d")
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		if w, err := os.OpenFile(filepath.Join(dir, "d"), os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("sweepTemps still waited for a writer of the named pipe after 30s")
	}
}
