package builtin_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

func fileKit(t *testing.T, cfg builtin.Config) (*toolkit.Toolkit, string) {
	t.Helper()
	cfg.Tools = []builtin.Tool{{Name: builtin.ViewTextFile}, {Name: builtin.WriteTextFile}, {Name: builtin.InsertTextFile}}
	return kit(t, cfg)
}

func TestViewTextFile(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{MaxFileBytes: 1000})
	writeFile(t, filepath.Join(ws, "five.txt"), "one\ntwo\nthree\nfour\nfive\n")
	writeFile(t, filepath.Join(ws, "noeol.txt"), "a\nb")
	writeFile(t, filepath.Join(ws, "empty.txt"), "")
	writeFile(t, filepath.Join(ws, "bin.dat"), "ab\x00cd")
	writeFile(t, filepath.Join(ws, "big.txt"), strings.Repeat("x", 1001))
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	ok := []struct {
		name   string
		input  map[string]any
		output string
	}{
		{"whole file", map[string]any{"file_path": "five.txt"},
			"The content of five.txt:\n```\n1: one\n2: two\n3: three\n4: four\n5: five\n```"},
		{"range", map[string]any{"file_path": "five.txt", "ranges": []any{2, 3}},
			"The content of five.txt in [2, 3] lines:\n```\n2: two\n3: three\n```"},
		{"last lines", map[string]any{"file_path": "five.txt", "ranges": []any{-2, -1}},
			"The content of five.txt in [-2, -1] lines:\n```\n4: four\n5: five\n```"},
		{"end clamped", map[string]any{"file_path": "five.txt", "ranges": []any{4, 100}},
			"The content of five.txt in [4, 100] lines:\n```\n4: four\n5: five\n```"},
		{"one line", map[string]any{"file_path": "five.txt", "ranges": []any{3, 3}},
			"The content of five.txt in [3, 3] lines:\n```\n3: three\n```"},
		// The schema's own example, [-100, -1] for the last 100 lines, was
		// refused for a file of fewer lines ("the file has only 5 lines"):
		// a start before the first line is the first line, as an end
		// after the last is the last.
		{"start before the first line", map[string]any{"file_path": "five.txt", "ranges": []any{-100, -1}},
			"The content of five.txt in [-100, -1] lines:\n```\n1: one\n2: two\n3: three\n4: four\n5: five\n```"},
		{"start before the first line, end inside", map[string]any{"file_path": "five.txt", "ranges": []any{-9, -4}},
			"The content of five.txt in [-9, -4] lines:\n```\n1: one\n2: two\n```"},
		{"no final newline", map[string]any{"file_path": "noeol.txt"}, "The content of noeol.txt:\n```\n1: a\n2: b\n```"},
		{"empty file", map[string]any{"file_path": "empty.txt"}, "The file empty.txt is empty."},
		// The last lines of an empty file ("the file has only 0 lines")
		// or any lines of it: it has none, and the answer says why.
		{"last lines of an empty file", map[string]any{"file_path": "empty.txt", "ranges": []any{-100, -1}}, "The file empty.txt is empty."},
		{"lines of an empty file", map[string]any{"file_path": "empty.txt", "ranges": []any{1, 10}}, "The file empty.txt is empty."},
		{"absolute path inside", map[string]any{"file_path": filepath.Join(ws, "noeol.txt"), "ranges": []any{1, 1}},
			"The content of " + filepath.Join(ws, "noeol.txt") + " in [1, 1] lines:\n```\n1: a\n```"},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			if got := wantOK(t, invoke(t, tk, builtin.ViewTextFile, tt.input)); got != tt.output {
				t.Errorf("got\n%s\nwant\n%s", got, tt.output)
			}
		})
	}
	bad := []struct {
		name  string
		input map[string]any
		code  toolkit.Code
		frag  string
	}{
		{"missing file", map[string]any{"file_path": "nope.txt"}, toolkit.CodeToolError, "Error: The file nope.txt does not exist."},
		{"directory", map[string]any{"file_path": "dir"}, toolkit.CodeToolError, "Error: The path dir is not a file."},
		{"binary", map[string]any{"file_path": "bin.dat"}, toolkit.CodeToolError, "binary"},
		{"too large", map[string]any{"file_path": "big.txt"}, toolkit.CodeToolError, "1001 bytes, over the limit of 1000"},
		{"through a file", map[string]any{"file_path": "five.txt/x"}, toolkit.CodeToolError, "not a directory"},
		{"line zero", map[string]any{"file_path": "five.txt", "ranges": []any{0, 2}}, toolkit.CodeInvalidInput, "0 is not a line"},
		{"start after end", map[string]any{"file_path": "five.txt", "ranges": []any{3, 2}}, toolkit.CodeInvalidInput, "start line is greater than the end line in the given range [3, 2]"},
		{"past the end", map[string]any{"file_path": "five.txt", "ranges": []any{6, 7}}, toolkit.CodeInvalidInput, "which has only 5 lines"},
		{"all before the first line", map[string]any{"file_path": "five.txt", "ranges": []any{-9, -7}}, toolkit.CodeInvalidInput, "only 5 lines"},
		{"one number", map[string]any{"file_path": "five.txt", "ranges": []any{1}}, toolkit.CodeInvalidInput, "Invalid range format"},
		{"three numbers", map[string]any{"file_path": "five.txt", "ranges": []any{1, 2, 3}}, toolkit.CodeInvalidInput, "Invalid range format"},
		{"not numbers", map[string]any{"file_path": "five.txt", "ranges": []any{"a", "b"}}, toolkit.CodeInvalidInput, "Invalid range format"},
		{"no path", map[string]any{}, toolkit.CodeInvalidInput, "file_path"},
		{"empty path", map[string]any{"file_path": ""}, toolkit.CodeInvalidInput, "file_path is empty"},
		{"NUL in path", map[string]any{"file_path": "a\x00b"}, toolkit.CodeInvalidInput, "NUL"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, invoke(t, tk, builtin.ViewTextFile, tt.input), tt.code, tt.frag)
		})
	}
}

func TestViewOutputLimit(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{MaxOutputBytes: 60})
	writeFile(t, filepath.Join(ws, "f.txt"), strings.Repeat("0123456789\n", 10))
	got := wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "f.txt"}))
	want := "The content of f.txt:\n```\n1: 0123456789\n2: 0123456789\n```\n[Lines 3-10 are not shown: the output limit of 60 bytes was reached. View them with ranges.]"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestWriteTextFile(t *testing.T) {
	tests := []struct {
		name     string
		before   *string // nil: the file does not exist
		input    map[string]any
		after    string
		response string
	}{
		{"create", nil, map[string]any{"content": "hello\n"}, "hello\n", "Create and write f.txt successfully."},
		{"create ignoring ranges", nil, map[string]any{"content": "x", "ranges": []any{2, 3}}, "x",
			"Create and write f.txt successfully. The ranges [2, 3] is ignored because the file does not exist."},
		{"overwrite", ptr("old\nold\n"), map[string]any{"content": "new"}, "new", "Overwrite f.txt successfully."},
		{"replace middle lines", ptr("1\n2\n3\n4\n"), map[string]any{"content": "two\nthree", "ranges": []any{2, 3}}, "1\ntwo\nthree\n4\n",
			"Write f.txt successfully. The new content snippet:\n```\n1: 1\n2: two\n3: three\n4: 4\n```"},
		{"replace by more lines", ptr("1\n2\n3\n"), map[string]any{"content": "a\nb\nc\n", "ranges": []any{2, 2}}, "1\na\nb\nc\n3\n",
			"Write f.txt successfully. The new content snippet:\n```\n1: 1\n2: a\n3: b\n4: c\n5: 3\n```"},
		{"delete lines", ptr("1\n2\n3\n"), map[string]any{"content": "", "ranges": []any{1, 2}}, "3\n",
			"Write f.txt successfully. The new content snippet:\n```\n1: 3\n```"},
		{"replace last line, negative", ptr("1\n2\n3\n"), map[string]any{"content": "end\n", "ranges": []any{-1, -1}}, "1\n2\nend\n",
			"Write f.txt successfully. The new content snippet:\n```\n1: 1\n2: 2\n3: end\n```"},
		{"append after a line without newline", ptr("1\n2"), map[string]any{"content": "3", "ranges": []any{3, 3}}, "1\n2\n3",
			"Write f.txt successfully. The new content snippet:\n```\n1: 1\n2: 2\n3: 3\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			if tt.before != nil {
				writeFile(t, path, *tt.before)
			}
			tt.input["file_path"] = "f.txt"
			if got := wantOK(t, invoke(t, tk, builtin.WriteTextFile, tt.input)); got != tt.response {
				t.Errorf("response\n%s\nwant\n%s", got, tt.response)
			}
			if got := readFile(t, path); got != tt.after {
				t.Errorf("file = %q, want %q", got, tt.after)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestWriteTextFileDetails(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	t.Run("creates parent directories", func(t *testing.T) {
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "a/b/c.txt", "content": "x"}))
		if got := readFile(t, filepath.Join(ws, "a", "b", "c.txt")); got != "x" {
			t.Errorf("file = %q", got)
		}
	})
	t.Run("keeps the mode", func(t *testing.T) {
		path := filepath.Join(ws, "run.sh")
		writeFile(t, path, "#!/bin/sh\n")
		if err := os.Chmod(path, 0o750); err != nil {
			t.Fatal(err)
		}
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "run.sh", "content": "#!/bin/sh\necho hi\n"}))
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o750 {
			t.Errorf("mode = %v, want 0750", fi.Mode().Perm())
		}
	})
	writeFile(t, filepath.Join(ws, "three.txt"), "1\n2\n3\n")
	if err := os.Mkdir(filepath.Join(ws, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name  string
		input map[string]any
		code  toolkit.Code
		frag  string
	}{
		{"directory", map[string]any{"file_path": "dir", "content": "x"}, toolkit.CodeToolError, "not a regular file"},
		{"start past the end", map[string]any{"file_path": "three.txt", "content": "x", "ranges": []any{5, 5}}, toolkit.CodeInvalidInput, "has 3 lines"},
		{"reversed", map[string]any{"file_path": "three.txt", "content": "x", "ranges": []any{3, 1}}, toolkit.CodeInvalidInput, "greater than the end line"},
		{"start before the first line", map[string]any{"file_path": "three.txt", "content": "x", "ranges": []any{-9, -1}}, toolkit.CodeInvalidInput, "only 3 lines"},
		{"no content", map[string]any{"file_path": "three.txt"}, toolkit.CodeInvalidInput, "content"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, invoke(t, tk, builtin.WriteTextFile, tt.input), tt.code, tt.frag)
			if got := readFile(t, filepath.Join(ws, "three.txt")); got != "1\n2\n3\n" {
				t.Errorf("a refused write changed the file: %q", got)
			}
		})
	}
}

func TestInsertTextFile(t *testing.T) {
	tests := []struct {
		name     string
		before   string
		line     int
		content  string
		after    string
		response string
	}{
		{"at the start", "1\n2\n", 1, "0", "0\n1\n2\n",
			"Insert content into f.txt at line 1 successfully. The new content between lines 1-3 is:\n```\n1: 0\n2: 1\n3: 2\n```"},
		{"in the middle", "1\n3\n", 2, "2", "1\n2\n3\n",
			"Insert content into f.txt at line 2 successfully. The new content between lines 1-3 is:\n```\n1: 1\n2: 2\n3: 3\n```"},
		{"append", "1\n2\n", 3, "3", "1\n2\n\n3",
			"Insert content into f.txt at line 3 successfully. The new content between lines 1-4 is:\n```\n1: 1\n2: 2\n3: \n4: 3\n```"},
		{"append after a line without newline", "1", 2, "2", "1\n2",
			"Insert content into f.txt at line 2 successfully. The new content between lines 1-2 is:\n```\n1: 1\n2: 2\n```"},
		{"into an empty file", "", 1, "x", "\nx",
			"Insert content into f.txt at line 1 successfully. The new content between lines 1-2 is:\n```\n1: \n2: x\n```"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, ws := fileKit(t, builtin.Config{})
			path := filepath.Join(ws, "f.txt")
			writeFile(t, path, tt.before)
			r := invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "line_number": tt.line, "content": tt.content})
			if got := wantOK(t, r); got != tt.response {
				t.Errorf("response\n%s\nwant\n%s", got, tt.response)
			}
			if got := readFile(t, path); got != tt.after {
				t.Errorf("file = %q, want %q", got, tt.after)
			}
		})
	}
}

func TestInsertTextFileBadInput(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	writeFile(t, filepath.Join(ws, "f.txt"), "1\n2\n")
	tests := []struct {
		name  string
		input map[string]any
		code  toolkit.Code
		frag  string
	}{
		{"line zero", map[string]any{"file_path": "f.txt", "content": "x", "line_number": 0}, toolkit.CodeInvalidInput, "The line number 0 is invalid."},
		{"line past the end", map[string]any{"file_path": "f.txt", "content": "x", "line_number": 4}, toolkit.CodeInvalidInput, "not in the valid range [1, 3]"},
		{"missing file", map[string]any{"file_path": "g.txt", "content": "x", "line_number": 1}, toolkit.CodeToolError, "The target file g.txt does not exist."},
		{"no line number", map[string]any{"file_path": "f.txt", "content": "x"}, toolkit.CodeInvalidInput, "line_number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, invoke(t, tk, builtin.InsertTextFile, tt.input), tt.code, tt.frag)
			if got := readFile(t, filepath.Join(ws, "f.txt")); got != "1\n2\n" {
				t.Errorf("a refused insert changed the file: %q", got)
			}
		})
	}
}

// TestSpecialFilesRefused: a named pipe, a socket or a device in the
// workspace is refused at once by every file tool, with what it is; no
// call waits on a pipe without a writer (the open does not block, so no
// OS thread is left behind either).
func TestSpecialFilesRefused(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	if err := ostest.Mkfifo(t, filepath.Join(ws, "pipe"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO here: %v", err)
	}
	l, err := ostest.ListenUnix(t, filepath.Join(ws, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Symlink("/dev/zero", filepath.Join(ws, "zero")); err != nil {
		t.Fatal(err)
	}
	inputs := map[string]map[string]any{
		builtin.ViewTextFile:   {},
		builtin.WriteTextFile:  {"content": "x"},
		builtin.InsertTextFile: {"content": "x", "line_number": 1},
	}
	cases := []struct {
		tool, file, kind string
	}{
		{builtin.ViewTextFile, "pipe", "a named pipe (FIFO)"},
		{builtin.InsertTextFile, "pipe", "a named pipe (FIFO)"},
		{builtin.WriteTextFile, "pipe", "a named pipe (FIFO)"},
		{builtin.ViewTextFile, "sock", "a socket"},
		{builtin.WriteTextFile, "sock", "a socket"},
	}
	for _, tc := range cases {
		t.Run(tc.tool+"/"+tc.file, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			start := time.Now()
			input := maps.Clone(inputs[tc.tool])
			input["file_path"] = tc.file
			resp := tk.Invoke(ctx, toolkit.ToolCall{ID: "t", Name: tc.tool, Input: input})
			if time.Since(start) > 20*time.Second {
				t.Fatalf("the call waited %v", time.Since(start))
			}
			if resp.Code != toolkit.CodeToolError || !strings.Contains(resp.Text(), tc.kind) {
				t.Fatalf("final %s %s: %s; want a tool_error naming %s", resp.State, resp.Code, resp.Text(), tc.kind)
			}
		})
	}
	// /dev/zero through a symlink is outside the workspace: refused by the
	// confinement before its type matters.
	resp := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "z", Name: builtin.ViewTextFile, Input: map[string]any{"file_path": "zero"}})
	if resp.State == toolkit.StateSuccess {
		t.Fatalf("a device was read: %s", resp.Text())
	}
	// Many calls on the pipe leave no threads behind.
	before := threads(t)
	for range 50 {
		tk.Invoke(context.Background(), toolkit.ToolCall{ID: "p", Name: builtin.ViewTextFile, Input: map[string]any{"file_path": "pipe"}})
	}
	if after := threads(t); after > before+5 {
		t.Errorf("threads grew from %d to %d after 50 calls on a pipe", before, after)
	}
}

// threads counts the process's OS threads.
func threads(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc here")
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			var n int
			fmt.Sscan(strings.TrimSpace(v), &n)
			return n
		}
	}
	return 0
}

// Edits of one file at the same time each read the file, change it and
// put the result in its place: without an order among them, an edit
// replaced the file with its own version of what it read, dropping
// what another edit had put there meanwhile. Edits of a file are done
// one after another, also when they reach it through a symlink.
func TestConcurrentEditsKeepEachOther(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{})
	path := filepath.Join(ws, "f.txt")
	writeFile(t, path, "end\n")
	if err := os.Symlink("f.txt", filepath.Join(ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	const n = 24
	errs := make(chan string, n)
	for i := range n {
		go func() {
			p := "f.txt"
			if i%2 == 1 {
				p = "link.txt"
			}
			var r *toolkit.Response
			if i%3 == 0 { // the last line, "end", by a new line and itself
				r = invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": p, "ranges": []any{-1, -1}, "content": fmt.Sprintf("edit %d\nend\n", i)})
			} else {
				r = invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": p, "line_number": 1, "content": fmt.Sprintf("edit %d", i)})
			}
			if r.State != toolkit.StateSuccess {
				errs <- fmt.Sprintf("edit %d: %s %s", i, r.Code, r.Text())
				return
			}
			errs <- ""
		}()
	}
	for range n {
		if e := <-errs; e != "" {
			t.Error(e)
		}
	}
	got := readFile(t, path)
	for i := range n {
		if !strings.Contains(got, fmt.Sprintf("edit %d\n", i)) {
			t.Errorf("edit %d is lost; the file is\n%s", i, got)
		}
	}
}

// A file whose size says less than it holds (the files of /proc and
// /sys say 0 or 4096, a file being appended to grows while it is read)
// was read only up to its size plus one byte: /proc/self/status was
// shown as its first letter, and an edit would have written that back.
// The file is read to its end, and the limit applies to what it holds.
func TestFileLargerThanItsSize(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc:", err)
	}
	fi, err := os.Stat("/proc/self/status")
	if err != nil || fi.Size() != 0 {
		t.Skipf("/proc/self/status does not say it is empty (%v, %v)", fi, err)
	}
	tk, _ := fileKit(t, builtin.Config{Workspace: "/proc/self"})
	got := wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "status"}))
	if !strings.Contains(got, "1: Name:") || !strings.Contains(got, ": Pid:\t") {
		t.Errorf("/proc/self/status shown as\n%s", got)
	}
	tk, _ = fileKit(t, builtin.Config{Workspace: "/proc/self", MaxFileBytes: 50})
	wantCode(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "status"}), toolkit.CodeToolError,
		"FileTooLargeError", `"status" is over the limit of 50 bytes`)
}

// An edit shows the content around its change, which holds the content
// the model sent: a huge insert or replacement came back whole, past the
// output limit that bounds every other answer of the file tools.
func TestEditOutputLimit(t *testing.T) {
	tk, ws := fileKit(t, builtin.Config{MaxOutputBytes: 80})
	path := filepath.Join(ws, "f.txt")
	big := strings.Repeat("0123456789\n", 1000)
	for _, tc := range []struct {
		tool  string
		input map[string]any
		want  string
	}{
		{builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "content": strings.TrimSuffix(big, "\n"), "line_number": 2},
			"Insert content into f.txt at line 2 successfully. The new content between lines 1-1004 is:\n```\n1: a\n2: 0123456789\n3: 0123456789\n4: 0123456789\n5: 0123456789\n6: 0123456789\n```\n[Lines 7-1004 are not shown: the output limit of 80 bytes was reached. View them with ranges.]"},
		{builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": big, "ranges": []any{2, 2}},
			"Write f.txt successfully. The new content snippet:\n```\n1: a\n2: 0123456789\n3: 0123456789\n4: 0123456789\n5: 0123456789\n6: 0123456789\n```\n[Lines 7-1003 are not shown: the output limit of 80 bytes was reached. View them with ranges.]"},
		{builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": strings.Repeat("x", 500), "ranges": []any{2, 2}},
			"Write f.txt successfully. The new content snippet:\n```\n1: a\n2: " + strings.Repeat("x", 68) + "\n```\n[Line 2 is cut after 71 of its 504 bytes: the output limit of 80 bytes was reached. Lines 3-4 are not shown; view them with ranges.]"},
	} {
		writeFile(t, path, "a\nb\nc\nd\n")
		got := wantOK(t, invoke(t, tk, tc.tool, tc.input))
		if got != tc.want {
			t.Errorf("%s: got\n%.600s\nwant\n%s", tc.tool, got, tc.want)
		}
	}
}
