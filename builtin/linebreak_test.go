package builtin_test

import (
	"path/filepath"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// A lone "\r" ended no line: "a\rb\n" was one line, shown with its "\r"
// (which a terminal or a model reads as the line starting again), and a
// "\r\n" line was shown with its "\r". AgentScope reads files in
// Python's text mode, whose universal newlines end a line at "\n", "\r\n"
// and a lone "\r" alike, and shows each as "\n". The tools now split
// lines so, and show them so; an edit writes the file's own break (its
// first line's), in the content too.
func TestLineBreaksAsAgentScope(t *testing.T) {
	tests := []struct {
		name   string
		before string
		tool   string
		input  map[string]any
		answer string // "" to check only the file
		after  string // "" when the tool only views
	}{
		{"view mixed breaks", "a\r\nb\rc\nd", builtin.ViewTextFile, map[string]any{},
			"The content of f.txt:\n```\n1: a\n2: b\n3: c\n4: d\n```", ""},
		{"view a range of CR lines", "a\rb\rc\rd\r", builtin.ViewTextFile, map[string]any{"ranges": []any{2, 3}},
			"The content of f.txt in [2, 3] lines:\n```\n2: b\n3: c\n```", ""},
		{"view the last CR line", "a\rb", builtin.ViewTextFile, map[string]any{"ranges": []any{-1, -1}},
			"The content of f.txt in [-1, -1] lines:\n```\n2: b\n```", ""},
		{"view past the CR lines", "a\rb\r", builtin.ViewTextFile, map[string]any{"ranges": []any{3, 3}},
			"InvalidArgumentError: The range '[3, 3]' is out of bounds for the file 'f.txt', which has only 2 lines.", ""},
		{"insert into CR lines", "a\rb\rc\r", builtin.InsertTextFile, map[string]any{"line_number": 3, "content": "x\ny"},
			"Insert content into f.txt at line 3 successfully. The new content between lines 1-5 is:\n```\n1: a\n2: b\n3: x\n4: y\n5: c\n```", "a\rb\rx\ry\rc\r"},
		{"append to CR lines", "a\rb", builtin.InsertTextFile, map[string]any{"line_number": 3, "content": "x"}, "", "a\rb\rx"},
		{"insert past the CR lines", "a\rb\r", builtin.InsertTextFile, map[string]any{"line_number": 4, "content": "x"},
			"InvalidArgumentsError: The given line_number (4) is not in the valid range [1, 3].", "a\rb\r"},
		{"replace CR lines", "a\rb\rc\r", builtin.WriteTextFile, map[string]any{"ranges": []any{2, 2}, "content": "x\r\ny"},
			"Write f.txt successfully. The new content snippet:\n```\n1: a\n2: x\n3: y\n4: c\n```", "a\rx\ry\rc\r"},
		{"replace CRLF lines with CR content", "a\r\nb\r\nc\r\n", builtin.WriteTextFile, map[string]any{"ranges": []any{2, 2}, "content": "x\ry"},
			"Write f.txt successfully. The new content snippet:\n```\n1: a\n2: x\n3: y\n4: c\n```", "a\r\nx\r\ny\r\nc\r\n"},
		{"replace a CR line in an LF file", "a\nb\rc\nd\n", builtin.WriteTextFile, map[string]any{"ranges": []any{3, 3}, "content": "x\n"},
			"Write f.txt successfully. The new content snippet:\n```\n1: a\n2: b\n3: x\n4: d\n```", "a\nb\rx\nd\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, tt.before)
			tt.input["file_path"] = "f.txt"
			r := invoke(t, tk, tt.tool, tt.input)
			if tt.answer != "" && r.Text() != tt.answer {
				t.Errorf("answer %s %q\nwant %q", r.State, r.Text(), tt.answer)
			}
			if tt.answer == "" && r.State != toolkit.StateSuccess {
				t.Errorf("%s %q", r.State, r.Text())
			}
			if tt.after != "" {
				if got := readFile(t, path); got != tt.after {
					t.Errorf("file = %q, want %q", got, tt.after)
				}
			}
		})
	}
}
