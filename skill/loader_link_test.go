package skill

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A SKILL.md that is a symbolic link to nothing (its target moved or
// not yet made) is a skill that does not load: it is warned of, at the
// root as below it, saying so, rather than taken for a directory
// without a SKILL.md, in silence.
func TestLoaderWarnsOfBrokenLink(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{root, filepath.Join(root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("moved.md", filepath.Join(d, FileName)); err != nil {
			t.Fatal(err)
		}
	}
	for _, scan := range []bool{false, true} {
		_, warns := NewLoader(root, &LoaderOptions{ScanSubdirs: scan, Logger: slog.New(slog.DiscardHandler)}).Load()
		want := map[string]bool{filepath.Join(root, FileName): true}
		if scan {
			want[filepath.Join(root, "sub", FileName)] = true
		}
		for _, w := range warns {
			if !want[w.Path] || !strings.Contains(w.Reason, `is a link to "moved.md", which does not exist`) {
				t.Errorf("scan %v: warning %v", scan, w)
			}
			delete(want, w.Path)
		}
		if len(want) > 0 {
			t.Errorf("scan %v: no warning for %v", scan, want)
		}
	}
}
