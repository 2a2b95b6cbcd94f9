package builtin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// An edit made its temporary file in the file's directory by its path
// and then renamed it over the file by the path again: a rename of the
// directory in between (a command's mv, a rotation) failed the edit
// with "does not exist" for a file that did, and left the temporary
// file, holding the content, in the directory's new place. The edit now
// writes and places its file in the directory it opened, wherever that
// went: it is as if the edit came first, and nothing is left behind.
func TestEditWhileItsDirectoryIsRenamed(t *testing.T) {
	ws := t.TempDir()
	sub, moved := filepath.Join(ws, "sub"), filepath.Join(ws, "moved")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "f.txt"), []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(nil)
	if err := Register(tk, Config{Workspace: ws, Tools: []Tool{{Name: WriteTextFile}, {Name: InsertTextFile}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { beforePlace = nil })
	for _, c := range []struct {
		tool, file, want string
		in               map[string]any
	}{
		{WriteTextFile, "f.txt", "new\n", map[string]any{"content": "new\n"}},
		{InsertTextFile, "f.txt", "x\nnew\n", map[string]any{"content": "x", "line_number": 1}},
		{WriteTextFile, "g.txt", "made\n", map[string]any{"content": "made\n"}},
	} {
		beforePlace = func() {
			if err := os.Rename(sub, moved); err != nil {
				t.Error(err)
			}
		}
		c.in["file_path"] = "sub/" + c.file
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c", Name: c.tool, Input: c.in})
		if r.State != toolkit.StateSuccess {
			t.Errorf("%s %s while sub was renamed: %s %s", c.tool, c.file, r.State, r.Text())
		}
		if got, err := os.ReadFile(filepath.Join(moved, c.file)); err != nil || string(got) != c.want {
			t.Errorf("after %s, moved/%s holds %q (%v), want %q", c.tool, c.file, got, err, c.want)
		}
		entries, err := os.ReadDir(moved)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), tempPrefix) {
				t.Errorf("after %s, %s was left in the renamed directory", c.tool, e.Name())
			}
		}
		beforePlace = nil
		if err := os.Rename(moved, sub); err != nil {
			t.Fatal(err)
		}
	}
}
