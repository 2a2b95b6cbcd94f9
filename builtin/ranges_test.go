package builtin_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// write_text_file and view_text_file answered malformed ranges with the
// schema validator's text ("validating /properties/ranges: maxItems:
// array length 3 is greater than 2"), where AgentScope's functions, which
// every list reaches, answer with their own: "Error: Invalid range
// format. Expected a list of two integers, but got [1, 2, 3]." (the list
// as Python prints it), and view_text_file's "InvalidArgumentError: ...";
// ranges whose start is after their end get AgentScope's text for that
// (its view_text_file's: its write_text_file has no check, and writes the
// content while keeping the lines in between twice). An empty list, to
// view, is the whole file, and, to create a file, no ranges at all.
func TestRangesAnswerAsAgentScope(t *testing.T) {
	const six = "1\n2\n3\n4\n5\n6\n"
	const format = "Invalid range format. Expected a list of two integers, but got "
	tests := []struct {
		name   string
		ranges any
		write  string // write_text_file's error, or "" when it succeeds
		view   string // view_text_file's answer (an error unless it starts with "The content")
	}{
		{"one number", []any{1}, "Error: " + format + "[1].", "InvalidArgumentError: " + format + "[1]."},
		{"three numbers", []any{1, 2, 3}, "Error: " + format + "[1, 2, 3].", "InvalidArgumentError: " + format + "[1, 2, 3]."},
		{"empty", []any{}, "Error: " + format + "[].", "The content of f.txt in [] lines:\n```\n1: 1\n2: 2\n3: 3\n4: 4\n5: 5\n6: 6\n```"},
		{"fractions", []any{1.5, 2}, "Error: " + format + "[1.5, 2].", "InvalidArgumentError: " + format + "[1.5, 2]."},
		{"exponents", []any{1e300, 2.5e-7}, "Error: " + format + "[1e+300, 2.5e-07].", "InvalidArgumentError: " + format + "[1e+300, 2.5e-07]."},
		{"strings", []any{"1", "it's"}, "Error: " + format + `['1', "it's"].`, "InvalidArgumentError: " + format + `['1', "it's"].`},
		{"nested lists", []any{[]any{1, 2}, []any{3, 4}}, "Error: " + format + "[[1, 2], [3, 4]].", "InvalidArgumentError: " + format + "[[1, 2], [3, 4]]."},
		{"null and an object", []any{nil, map[string]any{"a": true}}, "Error: " + format + "[None, {'a': True}].", "InvalidArgumentError: " + format + "[None, {'a': True}]."},
		{"start after end", []any{5, 3}, "InvalidArgumentError: The start line is greater than the end line in the given range [5, 3].",
			"InvalidArgumentError: The start line is greater than the end line in the given range [5, 3]."},
		{"start after end, past the end", []any{9, 7}, "Error: The start line 9 is invalid. The file only has 6 lines.",
			"InvalidArgumentError: The start line is greater than the end line in the given range [9, 7]."},
		{"negative", []any{-3, -1}, "", "The content of f.txt in [-3, -1] lines:\n```\n4: 4\n5: 5\n6: 6\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, six)
			r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "f.txt", "ranges": tt.ranges})
			wantState := toolkit.StateError
			if len(tt.view) > 11 && tt.view[:11] == "The content" {
				wantState = toolkit.StateSuccess
			}
			if r.State != wantState || r.Text() != tt.view {
				t.Errorf("view: %s %q\nwant %s %q", r.State, r.Text(), wantState, tt.view)
			}
			r = invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x\n", "ranges": tt.ranges})
			if tt.write == "" {
				wantOK(t, r)
				return
			}
			if r.State != toolkit.StateError || r.Code != toolkit.CodeInvalidInput || r.Text() != tt.write {
				t.Errorf("write: %s %s %q\nwant error invalid_input %q", r.State, r.Code, r.Text(), tt.write)
			}
			if got := readFile(t, path); got != six {
				t.Errorf("a refused write changed the file: %q", got)
			}
		})
	}

	// A value that is no list is refused before the tool runs, saying so.
	tk, ws := fileKit(t, builtin.Config{})
	writeFile(t, filepath.Join(ws, "f.txt"), six)
	wantCode(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x", "ranges": "1,3"}), toolkit.CodeInvalidInput, "ranges", "array")

	// A new file is written whatever the ranges; a non-empty list is
	// said to be ignored, as AgentScope says it.
	for i, tt := range []struct {
		ranges any
		want   string
	}{
		{[]any{}, "Create and write n0.txt successfully."},
		{[]any{1, 2, 3}, "Create and write n1.txt successfully. The ranges [1, 2, 3] is ignored because the file does not exist."},
		{[]any{"a"}, "Create and write n2.txt successfully. The ranges ['a'] is ignored because the file does not exist."},
	} {
		name := fmt.Sprintf("n%d.txt", i)
		if got := wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": name, "content": "x", "ranges": tt.ranges})); got != tt.want {
			t.Errorf("create with ranges %v: %q, want %q", tt.ranges, got, tt.want)
		}
	}
}
