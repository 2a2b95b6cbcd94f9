package builtin_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// The edits wrote a file over MaxFileBytes, which view_text_file and
// the edits then refused as too large: a tool made a file it could not
// read back. An edit whose file would be over the limit is now refused,
// and the file stays as it was.
func TestWriteOverMaxFileBytesRefused(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{MaxFileBytes: 100})
	big := strings.Repeat("x", 101)

	r := invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "new.txt", "content": big})
	wantCode(t, r, toolkit.CodeInvalidInput, "101 bytes", "limit of 100 bytes")
	if _, err := os.Lstat(filepath.Join(ws, "new.txt")); err == nil {
		t.Error("the file was created")
	}

	writeFile(t, filepath.Join(ws, "f.txt"), "a\nb\n")
	r = invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": big})
	wantCode(t, r, toolkit.CodeInvalidInput, "limit of 100 bytes")
	r = invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": strings.Repeat("y", 98), "ranges": []int{1, 1}})
	wantCode(t, r, toolkit.CodeInvalidInput, "101 bytes", "limit of 100 bytes")
	r = invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "content": strings.Repeat("y", 96), "line_number": 3})
	wantCode(t, r, toolkit.CodeInvalidInput, "101 bytes", "limit of 100 bytes")
	if got := readFile(t, filepath.Join(ws, "f.txt")); got != "a\nb\n" {
		t.Errorf("f.txt = %q", got)
	}

	// At the limit, it is written and read back.
	wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": big[:100]}))
	wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "f.txt"}))
}

// write_text_file wrote content holding NUL bytes, a file the file tools
// then refused as binary.
func TestWriteNULRefused(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	r := invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "new.txt", "content": "a\x00b"})
	wantCode(t, r, toolkit.CodeInvalidInput, "NUL")
	if _, err := os.Lstat(filepath.Join(ws, "new.txt")); err == nil {
		t.Error("the file was created")
	}
	writeFile(t, filepath.Join(ws, "f.txt"), "a\n")
	r = invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "content": "\x00\n", "line_number": 1})
	wantCode(t, r, toolkit.CodeInvalidInput, "NUL")
	if got := readFile(t, filepath.Join(ws, "f.txt")); got != "a\n" {
		t.Errorf("f.txt = %q", got)
	}
}

// A MaxFileBytes of math.MaxInt64 (a configuration's "no limit") made
// the read's bound, one byte past the limit, overflow to a negative
// number, so every file read as empty: view_text_file said so, and an
// insert replaced the file with the inserted line alone, the file's
// content gone. The whole file is read.
func TestLargestMaxFileBytesReadsTheFile(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{MaxFileBytes: math.MaxInt64})
	writeFile(t, filepath.Join(ws, "f.txt"), "keep\nthis\n")
	if got := wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "f.txt"})); !strings.Contains(got, "1: keep\n2: this\n") {
		t.Errorf("view: %q", got)
	}
	wantOK(t, invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "content": "x", "line_number": 1}))
	if got := readFile(t, filepath.Join(ws, "f.txt")); got != "x\nkeep\nthis\n" {
		t.Errorf("after the insert f.txt = %q, want %q", got, "x\nkeep\nthis\n")
	}
}

// TestSparseFileUnderAHugeLimit: with a limit of a terabyte or more, a
// sparse file of a terabyte passed the size check and the read reserved
// its whole size in memory at once, which the runtime could not give: the
// worker died (fatal error: out of memory) rather than call the file
// binary. Run in a child, so that a crash fails the test alone.
func TestSparseFileUnderAHugeLimit(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_SPARSE_CHILD") {
		return
	}
	tk, ws := fileKit(t, builtin.Config{MaxFileBytes: math.MaxInt64})
	f, err := os.Create(filepath.Join(ws, "sparse.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 40); err != nil {
		t.Skipf("no sparse file of a terabyte here: %v", err)
	}
	for _, name := range []string{builtin.ViewTextFile, builtin.InsertTextFile} {
		in := map[string]any{"file_path": "sparse.txt"}
		if name == builtin.InsertTextFile {
			in["content"], in["line_number"] = "x", 1
		}
		wantCode(t, invoke(t, tk, name, in), toolkit.CodeToolError, "BinaryFileError")
	}
}
