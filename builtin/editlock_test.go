package builtin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestEditWaitEndsWithItsContext: an edit waits for the file's other
// edits to end, and that wait did not look at the call's context: while
// one edit held the file (stuck on a network file system, say), every
// later edit of it stayed past its deadline and cancel, holding Invoke
// (and, on a worker, a goroutine for each abandoned call).
func TestEditWaitEndsWithItsContext(t *testing.T) {
	ws, err := openWorkspace(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws.real, "f.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &files{ws: ws, maxFile: DefaultMaxFileBytes, maxOutput: DefaultMaxOutputBytes}
	unlock, err := f.edits.lock(context.Background(), filepath.Join(ws.real, "f.txt")) // an edit that does not end
	if err != nil {
		t.Fatal(err)
	}

	calls := []func(context.Context) error{
		func(ctx context.Context) error {
			_, err := f.insert(ctx, insertInput{FilePath: "f.txt", Content: "x", LineNumber: 1})
			return err
		},
		func(ctx context.Context) error {
			_, err := f.write(ctx, writeInput{FilePath: "f.txt", Content: "x\n"})
			return err
		},
	}
	for i, call := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- call(ctx) }()
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("edit %d: %v, want context.Canceled", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("edit %d still waits for the file after its context was cancelled", i)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(ws.real, "f.txt")); string(got) != "a\n" {
		t.Errorf("f.txt is %q after cancelled edits", got)
	}
	unlock()
	if n := len(f.edits.m); n != 0 {
		t.Errorf("%d files are still known to the edit locks after every edit ended", n)
	}
	// The file is free again: an edit goes through.
	if _, err := f.insert(context.Background(), insertInput{FilePath: "f.txt", Content: "x", LineNumber: 1}); err != nil {
		t.Fatal(err)
	}
}
