package builtin_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// A file whose lines end with "\r\n" got lines ending with "\n" from an
// edit: the content the model sends has "\n" breaks, and so had the
// break added after content without one. The file ended with mixed line
// breaks. An edit writes the file's own break, "\r\n" when its first
// line ends so.
func TestEditKeepsCRLF(t *testing.T) {
	tests := []struct {
		name   string
		before string
		tool   string
		input  map[string]any
		after  string
	}{
		{"insert without a break", "a\r\nb\r\n", builtin.InsertTextFile, map[string]any{"line_number": 2, "content": "x"}, "a\r\nx\r\nb\r\n"},
		{"insert lines", "a\r\nb\r\n", builtin.InsertTextFile, map[string]any{"line_number": 1, "content": "x\ny"}, "x\r\ny\r\na\r\nb\r\n"},
		{"insert CRLF content", "a\r\nb\r\n", builtin.InsertTextFile, map[string]any{"line_number": 2, "content": "x\r\ny"}, "a\r\nx\r\ny\r\nb\r\n"},
		{"append after a last line with its break", "a\r\nb\r\n", builtin.InsertTextFile, map[string]any{"line_number": 3, "content": "x\ny"}, "a\r\nb\r\n\r\nx\r\ny"},
		{"append after a last line without break", "a\r\nb", builtin.InsertTextFile, map[string]any{"line_number": 3, "content": "x"}, "a\r\nb\r\nx"},
		{"replace lines", "a\r\nb\r\nc\r\n", builtin.WriteTextFile, map[string]any{"ranges": []any{2, 2}, "content": "x\ny"}, "a\r\nx\r\ny\r\nc\r\n"},
		{"LF file stays LF", "a\nb\n", builtin.InsertTextFile, map[string]any{"line_number": 2, "content": "x"}, "a\nx\nb\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, tt.before)
			tt.input["file_path"] = "f.txt"
			wantOK(t, invoke(t, tk, tt.tool, tt.input))
			if got := readFile(t, path); got != tt.after {
				t.Errorf("file = %q, want %q", got, tt.after)
			}
		})
	}
}

// A file that starts with a byte order mark had it moved after the
// content of an insert before line 1 (a U+FEFF in the middle of the
// file, and none at its start), and dropped by a replacement of line 1.
// The mark stays first; content that starts with one (line 1 as
// view_text_file shows it) does not add a second.
func TestEditKeepsByteOrderMark(t *testing.T) {
	const bom = "\uFEFF"
	tests := []struct {
		name   string
		before string
		tool   string
		input  map[string]any
		after  string
	}{
		{"insert before line 1", bom + "a\nb\n", builtin.InsertTextFile, map[string]any{"line_number": 1, "content": "x"}, bom + "x\na\nb\n"},
		{"insert before line 2", bom + "a\nb\n", builtin.InsertTextFile, map[string]any{"line_number": 2, "content": "x"}, bom + "a\nx\nb\n"},
		{"replace line 1", bom + "a\nb\n", builtin.WriteTextFile, map[string]any{"ranges": []any{1, 1}, "content": "x"}, bom + "x\nb\n"},
		{"replace line 1 with its mark", bom + "a\nb\n", builtin.WriteTextFile, map[string]any{"ranges": []any{1, 1}, "content": bom + "x\n"}, bom + "x\nb\n"},
		{"delete line 1", bom + "a\nb\n", builtin.WriteTextFile, map[string]any{"ranges": []any{1, 1}, "content": ""}, bom + "b\n"},
		{"CRLF insert before line 1", bom + "a\r\nb\r\n", builtin.InsertTextFile, map[string]any{"line_number": 1, "content": "x"}, bom + "x\r\na\r\nb\r\n"},
		{"no mark, none added", "a\n", builtin.InsertTextFile, map[string]any{"line_number": 1, "content": "x"}, "x\na\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, tt.before)
			tt.input["file_path"] = "f.txt"
			wantOK(t, invoke(t, tk, tt.tool, tt.input))
			if got := readFile(t, path); got != tt.after {
				t.Errorf("file = %q, want %q", got, tt.after)
			}
		})
	}
}

// A file that starts with a byte order mark, all of whose lines were
// deleted, kept the mark alone, which the tools took for a line: viewing
// showed "1: \ufeff" where an emptied file without a mark is "empty",
// and appending after that line wrote a line break after the mark: it is
// an empty file, into which an insert writes a line break and then the
// content, as AgentScope's does.
func TestEmptiedFileKeepsOnlyItsMark(t *testing.T) {
	const bom = "\uFEFF"
	tk, ws := fileKit(t, builtin.Config{})
	path := filepath.Join(ws, "f.txt")
	writeFile(t, path, bom+"a\nb\n")
	wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "ranges": []any{1, -1}, "content": ""}))
	if r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "f.txt"}); !strings.Contains(r.Text(), "is empty") {
		t.Errorf("view of a file emptied but for its mark: %q, want it empty", r.Text())
	}
	if r := invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "line_number": 2, "content": "x\n"}); r.State == toolkit.StateSuccess {
		t.Errorf("insert before line 2 of a file without lines: %q, want it out of range", r.Text())
	}
	wantOK(t, invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "line_number": 1, "content": "x"}))
	if got := readFile(t, path); got != bom+"\nx" {
		t.Errorf("file = %q, want %q", got, bom+"\nx")
	}
}
