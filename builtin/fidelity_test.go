package builtin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTextFileToolsAnswerAsAgentScope: port of AgentScope's
// tool_test.py (test_view_text_file, test_write_text_file,
// test_insert_text_file): the answers are AgentScope's, word for word,
// with its 5 lines of context. Failures stay errors (state error), with
// AgentScope's texts; a last line without "\n" is still shown ending the
// line before the closing fence.
func TestTextFileToolsAnswerAsAgentScope(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	path := filepath.Join(ws, "tmp.txt")
	writeFile(t, path, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
	view := func(ranges any) *toolkit.Response {
		in := map[string]any{"file_path": "tmp.txt"}
		if ranges != nil {
			in["ranges"] = ranges
		}
		return invoke(t, tk, builtin.ViewTextFile, in)
	}
	for _, tt := range []struct {
		ranges any
		want   string
	}{
		{nil, "The content of tmp.txt:\n```\n1: 1\n2: 2\n3: 3\n4: 4\n5: 5\n6: 6\n7: 7\n8: 8\n9: 9\n10: 10\n```"},
		{[]any{3, 5}, "The content of tmp.txt in [3, 5] lines:\n```\n3: 3\n4: 4\n5: 5\n```"},
		{[]any{8, 13}, "The content of tmp.txt in [8, 13] lines:\n```\n8: 8\n9: 9\n10: 10\n```"},
	} {
		if got := wantOK(t, view(tt.ranges)); got != tt.want {
			t.Errorf("view %v:\n got %q\nwant %q", tt.ranges, got, tt.want)
		}
	}
	if r := view([]any{11, 13}); r.State != toolkit.StateError || r.Text() != "InvalidArgumentError: The range '[11, 13]' is out of bounds for the file 'tmp.txt', which has only 10 lines." {
		t.Errorf("view [11, 13]: %s %q", r.State, r.Text())
	}

	write := func(content string, ranges any) string {
		in := map[string]any{"file_path": "w.txt", "content": content}
		if ranges != nil {
			in["ranges"] = ranges
		}
		return wantOK(t, invoke(t, tk, builtin.WriteTextFile, in))
	}
	for _, tt := range []struct {
		content string
		ranges  any
		want    string
	}{
		{"a\nb\nc\n", nil, "Create and write w.txt successfully."},
		{"d\n", []any{2, 2}, "Write w.txt successfully. The new content snippet:\n```\n1: a\n2: d\n3: c\n```"},
		{"x\n", nil, "Overwrite w.txt successfully."},
	} {
		if got := write(tt.content, tt.ranges); got != tt.want {
			t.Errorf("write %q %v:\n got %q\nwant %q", tt.content, tt.ranges, got, tt.want)
		}
	}
	if got, want := wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "new.txt", "content": "x", "ranges": []any{2, 3}})),
		"Create and write new.txt successfully. The ranges [2, 3] is ignored because the file does not exist."; got != want {
		t.Errorf("write new with ranges:\n got %q\nwant %q", got, want)
	}
	var fifty []string
	for i := range 50 {
		fifty = append(fifty, fmt.Sprint(i))
	}
	writeFile(t, path, strings.Join(fifty, "\n"))
	numbered := func(from int, lines ...string) string {
		var b strings.Builder
		for i, l := range lines {
			fmt.Fprintf(&b, "%d: %s\n", from+i, l)
		}
		return b.String()
	}
	for _, tt := range []struct {
		content string
		line    int
		want    string
	}{
		{"d", 1, "Insert content into tmp.txt at line 1 successfully. The new content between lines 1-7 is:\n```\n" +
			numbered(1, "d", "0", "1", "2", "3", "4", "5") + "```"},
		{"e", 25, "Insert content into tmp.txt at line 25 successfully. The new content between lines 20-31 is:\n```\n" +
			numbered(20, "18", "19", "20", "21", "22", "e", "23", "24", "25", "26", "27", "28") + "```"},
		{"a\nb\nc\nd\ne\nf\ng\nh\ni\nj", 25, "Insert content into tmp.txt at line 25 successfully. The new content between lines 20-40 is:\n```\n" +
			numbered(20, "18", "19", "20", "21", "22", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "e", "23", "24", "25", "26", "27") + "```"},
		{"The\nlast\nline", 63, "Insert content into tmp.txt at line 63 successfully. The new content between lines 58-65 is:\n```\n" +
			numbered(58, "45", "46", "47", "48", "49", "The", "last", "line") + "```"},
	} {
		got := wantOK(t, invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "tmp.txt", "content": tt.content, "line_number": tt.line}))
		if got != tt.want {
			t.Errorf("insert %q at %d:\n got %q\nwant %q", tt.content, tt.line, got, tt.want)
		}
	}
	r := invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "tmp.txt", "content": "end\nof\ntest", "line_number": 100})
	if want := "InvalidArgumentsError: The given line_number (100) is not in the valid range [1, 66]."; r.State != toolkit.StateError || r.Text() != want {
		t.Errorf("insert at 100: %s %q, want %q", r.State, r.Text(), want)
	}
}

// TestInsertTextFileAsAgentScope: AgentScope's insert_text_file writes
// the content followed by a line break before the line (so content
// ending in "\n" leaves an empty line after it), and at the number of
// lines plus one appends a line break and then the content (so after a
// last line with its break an empty line comes first, and an empty
// file starts with one); it refuses a line number of 0 or less before
// it looks at the file, and names a missing file with its own text.
func TestInsertTextFileAsAgentScope(t *testing.T) {
	for _, tt := range []struct {
		name, before string
		line         int
		content      string
		after, want  string
	}{
		{"line 1", "1\n2\n", 1, "0", "0\n1\n2\n",
			"Insert content into f.txt at line 1 successfully. The new content between lines 1-3 is:\n```\n1: 0\n2: 1\n3: 2\n```"},
		{"content ending in a break", "1\n2\n", 2, "x\n", "1\nx\n\n2\n",
			"Insert content into f.txt at line 2 successfully. The new content between lines 1-4 is:\n```\n1: 1\n2: x\n3: \n4: 2\n```"},
		{"empty content", "1\n2\n", 1, "", "\n1\n2\n",
			"Insert content into f.txt at line 1 successfully. The new content between lines 1-3 is:\n```\n1: \n2: 1\n3: 2\n```"},
		{"append after a line break", "1\n2\n", 3, "3", "1\n2\n\n3",
			"Insert content into f.txt at line 3 successfully. The new content between lines 1-4 is:\n```\n1: 1\n2: 2\n3: \n4: 3\n```"},
		{"append after a line without a break", "1\n2", 3, "3", "1\n2\n3",
			"Insert content into f.txt at line 3 successfully. The new content between lines 1-3 is:\n```\n1: 1\n2: 2\n3: 3\n```"},
		{"into an empty file", "", 1, "x", "\nx",
			"Insert content into f.txt at line 1 successfully. The new content between lines 1-2 is:\n```\n1: \n2: x\n```"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, tt.before)
			r := invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "content": tt.content, "line_number": tt.line})
			if got := wantOK(t, r); got != tt.want {
				t.Errorf("answer\n got %q\nwant %q", got, tt.want)
			}
			if got := readFile(t, path); got != tt.after {
				t.Errorf("file = %q, want %q", got, tt.after)
			}
		})
	}
	tk, ws := fileKit(t, builtin.Config{})
	writeFile(t, filepath.Join(ws, "f.txt"), "1\n2\n")
	for _, tt := range []struct {
		file string
		line int
		want string
	}{
		{"f.txt", 0, "InvalidArgumentsError: The line number 0 is invalid. "},
		{"f.txt", -3, "InvalidArgumentsError: The line number -3 is invalid. "},
		{"g.txt", 0, "InvalidArgumentsError: The line number 0 is invalid. "}, // before the file is looked at
		{"f.txt", 4, "InvalidArgumentsError: The given line_number (4) is not in the valid range [1, 3]."},
		{"g.txt", 1, "InvalidArgumentsError: The target file g.txt does not exist. "},
	} {
		r := invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": tt.file, "content": "x", "line_number": tt.line})
		if r.State != toolkit.StateError || r.Text() != tt.want {
			t.Errorf("insert into %s at %d: %s %q, want %q", tt.file, tt.line, r.State, r.Text(), tt.want)
		}
	}
	if got := readFile(t, filepath.Join(ws, "f.txt")); got != "1\n2\n" {
		t.Errorf("a refused insert changed the file: %q", got)
	}
}

// TestWriteTextFileRangeErrorsAsAgentScope: write_text_file's ranges
// starting past the end of the file (beyond the line after the last,
// which appends here) are refused with AgentScope's text.
func TestWriteTextFileRangeErrorsAsAgentScope(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	writeFile(t, filepath.Join(ws, "f.txt"), "1\n2\n")
	for _, tt := range []struct {
		ranges any
		want   string
	}{
		{[]any{4, 5}, "Error: The start line 4 is invalid. The file only has 2 lines."},
		{[]any{9, 9}, "Error: The start line 9 is invalid. The file only has 2 lines."},
	} {
		r := invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x", "ranges": tt.ranges})
		if r.State != toolkit.StateError || r.Text() != tt.want {
			t.Errorf("write ranges %v: %s %q, want %q", tt.ranges, r.State, r.Text(), tt.want)
		}
	}
	if got := readFile(t, filepath.Join(ws, "f.txt")); got != "1\n2\n" {
		t.Errorf("a refused write changed the file: %q", got)
	}
}

// TestViewTextFileErrorsAsAgentScope: view_text_file on a missing file
// or a directory answers in AgentScope's words ("Error: The file f does
// not exist.", "Error: The path d is not a file."), with the tool_error
// code of every file tool's refusal.
func TestViewTextFileErrorsAsAgentScope(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ file, want string }{
		{"nope.txt", "Error: The file nope.txt does not exist."},
		{"d", "Error: The path d is not a file."},
	} {
		r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": tt.file})
		if r.Code != toolkit.CodeToolError || r.Text() != tt.want {
			t.Errorf("view %s: %s %q, want %s %q", tt.file, r.Code, r.Text(), toolkit.CodeToolError, tt.want)
		}
	}
}
