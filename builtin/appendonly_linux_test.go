package builtin_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolbus/toolbus/builtin"
)

// TestEditInAppendOnlyDirectory: in an append-only directory files may
// be made but not removed or renamed over, so a replacement would leave
// its temporary file behind at each edit. Edits there are made in place
// (a new file written where it is made), leaving nothing else.
func TestEditInAppendOnlyDirectory(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	dir := filepath.Join(ws, "logs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f.txt")
	writeFile(t, path, "1\n2\n3\n")
	chattr(t, dir, "a")

	wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("logs/f.txt", map[string]any{"content": "one\ntwo\nthree\n"})))
	wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("logs/f.txt", map[string]any{"content": "2\n", "ranges": []any{2, 2}})))
	wantOK(t, invoke(t, tk, builtin.InsertTextFile, editInput("logs/f.txt", map[string]any{"content": "zero", "line_number": 1})))
	wantOK(t, invoke(t, tk, builtin.WriteTextFile, editInput("logs/g.txt", map[string]any{"content": "new\n"})))

	if got := readFile(t, path); got != "zero\none\n2\nthree\n" {
		t.Errorf("f.txt = %q, want every edit", got)
	}
	if got := readFile(t, filepath.Join(dir, "g.txt")); got != "new\n" {
		t.Errorf("g.txt = %q, want %q", got, "new\n")
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"f.txt", "g.txt"}) {
		t.Errorf("the directory holds %q, want only f.txt and g.txt", got)
	}
}
