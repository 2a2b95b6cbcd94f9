package skill

import (
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestDuplicateWarningsBounded: the set remembers each duplicate it has
// warned of (a name, the skill replaced, the one replacing it), so as
// to warn once; a skills directory whose duplicate's folder keeps a new
// name (renamed again and again, by whoever writes there) grew that
// memory by one entry for each, for the worker's life. It is bounded:
// past maxDupes it is forgotten, and the duplicates seen since are
// warned of once more.
func TestDuplicateWarningsBounded(t *testing.T) {
	defer func(n int) { maxDupes = n }(maxDupes)
	maxDupes = 10
	root := t.TempDir()
	writeSkill(t, filepath.Join(root, "a"), skillDoc("x", "first", "# A"))
	writeSkill(t, filepath.Join(root, "b0"), skillDoc("x", "second", "# B"))
	set, err := NewSet(&Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.AddDir("", root, &LoaderOptions{ScanSubdirs: true, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 50; i++ {
		if sk, ok := set.Find("x", nil); !ok || sk.Markdown != "# B" {
			t.Fatalf("Find(x) = %+v, %v; want the later skill", sk, ok)
		}
		if err := os.Rename(filepath.Join(root, "b"+strconv.Itoa(i-1)), filepath.Join(root, "b"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	set.mu.Lock()
	n := len(set.dupes)
	set.mu.Unlock()
	if n > maxDupes {
		t.Fatalf("%d duplicate warnings remembered, want at most %d", n, maxDupes)
	}
}
