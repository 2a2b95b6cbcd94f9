package builtin_test

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// edits are the calls that change an existing file, on file_path.
var edits = []struct {
	name  string
	tool  string
	input map[string]any
	after string // of "1\n2\n3\n"
}{
	{"overwrite", builtin.WriteTextFile, map[string]any{"content": "new\n"}, "new\n"},
	{"replace lines", builtin.WriteTextFile, map[string]any{"content": "two\n", "ranges": []any{2, 2}}, "1\ntwo\n3\n"},
	{"insert", builtin.InsertTextFile, map[string]any{"content": "zero", "line_number": 1}, "zero\n1\n2\n3\n"},
}

func editInput(path string, in map[string]any) map[string]any {
	out := map[string]any{"file_path": path}
	for k, v := range in {
		out[k] = v
	}
	return out
}

// entries lists dir's names, to catch temporary files left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestEditReplacesWholeFile: an edit puts a complete new file in place
// of the old one instead of rewriting it, so a reader that opened the
// file before the edit reads the whole old content, never a truncated or
// half-written one, and nothing else is left in the directory.
func TestEditReplacesWholeFile(t *testing.T) {
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, "1\n2\n3\n")
			reader, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer reader.Close()
			wantOK(t, invoke(t, tk, e.tool, editInput("f.txt", e.input)))
			old, err := io.ReadAll(reader)
			if err != nil {
				t.Fatal(err)
			}
			if string(old) != "1\n2\n3\n" {
				t.Errorf("a reader that opened the file before the edit read %q, want the old content", old)
			}
			if got := readFile(t, path); got != e.after {
				t.Errorf("file = %q, want %q", got, e.after)
			}
			if got := entries(t, ws); !slices.Equal(got, []string{"f.txt"}) {
				t.Errorf("the workspace holds %q, want only f.txt", got)
			}
		})
	}
}

// TestEditReadOnlyDirectory: a writable file in a directory the worker
// may not write to cannot be replaced (its new version would be written
// beside it), so it is edited in place, as before edits were atomic.
func TestEditReadOnlyDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to read-only directories")
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			dir := filepath.Join(ws, "ro")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "f.txt")
			writeFile(t, path, "1\n2\n3\n")
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
			wantOK(t, invoke(t, tk, e.tool, editInput("ro/f.txt", e.input)))
			if got := readFile(t, path); got != e.after {
				t.Errorf("file = %q, want %q", got, e.after)
			}
			if got := entries(t, dir); !slices.Equal(got, []string{"f.txt"}) {
				t.Errorf("the directory holds %q, want only f.txt", got)
			}
		})
	}
}

// TestEditKeepsMode: the new version of a file gets the old one's
// permission bits; a created file gets the mode os.WriteFile gives.
func TestEditKeepsMode(t *testing.T) {
	for _, e := range edits {
		for _, mode := range []fs.FileMode{0o600, 0o640, 0o755, 0o444} {
			t.Run(e.name+"/"+mode.String(), func(t *testing.T) {
				if mode&0o200 == 0 && os.Geteuid() != 0 {
					t.Skip("only root may write to a read-only file")
				}
				tk, ws := fileKit(t, builtin.Config{})
				path := filepath.Join(ws, "f.txt")
				writeFile(t, path, "1\n2\n3\n")
				if err := os.Chmod(path, mode); err != nil {
					t.Fatal(err)
				}
				wantOK(t, invoke(t, tk, e.tool, editInput("f.txt", e.input)))
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode() != mode {
					t.Errorf("mode = %v, want %v", fi.Mode(), mode)
				}
				if got := readFile(t, path); got != e.after {
					t.Errorf("file = %q, want %q", got, e.after)
				}
			})
		}
	}
	t.Run("create", func(t *testing.T) {
		tk, ws := fileKit(t, builtin.Config{})
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "new.txt", "content": "x"}))
		writeFile(t, filepath.Join(ws, "ref.txt"), "x")
		got, err := os.Stat(filepath.Join(ws, "new.txt"))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.Stat(filepath.Join(ws, "ref.txt"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Mode() != want.Mode() {
			t.Errorf("created with mode %v, want %v", got.Mode(), want.Mode())
		}
		if names := entries(t, ws); !slices.Equal(names, []string{"new.txt", "ref.txt"}) {
			t.Errorf("the workspace holds %q", names)
		}
	})
}

// TestEditThroughSymlink: a path that is a symbolic link to a file inside
// the workspace edits the link's target, as reading it reads the target;
// the link stays a link, and the new version is written beside the
// target, not beside the link.
func TestEditThroughSymlink(t *testing.T) {
	for _, e := range edits {
		for _, link := range []string{"file-in", "abs-file-in"} {
			t.Run(e.name+"/"+link, func(t *testing.T) {
				tk, ws, _ := confined(t)
				target := filepath.Join(ws, "sub", "deep.txt")
				writeFile(t, target, "1\n2\n3\n")
				if err := os.Symlink(target, filepath.Join(ws, "abs-file-in")); err != nil {
					t.Fatal(err)
				}
				rootBefore := entries(t, ws)
				wantOK(t, invoke(t, tk, e.tool, editInput(link, e.input)))
				fi, err := os.Lstat(filepath.Join(ws, link))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode()&fs.ModeSymlink == 0 {
					t.Fatalf("%s is now %v, want it to stay a symbolic link", link, fi.Mode())
				}
				if got := readFile(t, target); got != e.after {
					t.Errorf("target = %q, want %q", got, e.after)
				}
				if got := entries(t, ws); !slices.Equal(got, rootBefore) {
					t.Errorf("the workspace holds %q, want %q", got, rootBefore)
				}
				if got := entries(t, filepath.Join(ws, "sub")); !slices.Equal(got, []string{"deep.txt"}) {
					t.Errorf("the target's directory holds %q, want only deep.txt", got)
				}
			})
		}
	}
}

// TestEditReadOnlyFile: a file its mode keeps the worker from writing to
// is not replaced, though its directory would allow it.
func TestEditReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to read-only files")
	}
	for _, e := range edits {
		t.Run(e.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, "1\n2\n3\n")
			if err := os.Chmod(path, 0o444); err != nil {
				t.Fatal(err)
			}
			r := invoke(t, tk, e.tool, editInput("f.txt", e.input))
			wantCode(t, r, toolkit.CodeToolError, `"f.txt"`, "permission denied")
			if got := readFile(t, path); got != "1\n2\n3\n" {
				t.Errorf("file = %q, want it untouched", got)
			}
			if got := entries(t, ws); !slices.Equal(got, []string{"f.txt"}) {
				t.Errorf("the workspace holds %q, want only f.txt", got)
			}
		})
	}
}
