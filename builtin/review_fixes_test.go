package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// TestIdentityPathTraversal: an identity is encoded as a path component of
// the per-session directory, as a session is: "..", "../.." or "a/b"
// names no other directory.
func TestIdentityPathTraversal(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "ws")
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, builtin.Config{Workspace: dir, PerSessionWorkspace: true,
		Tools: []builtin.Tool{{Name: builtin.ViewTextFile}, {Name: builtin.WriteTextFile}}}); err != nil {
		t.Fatal(err)
	}
	call := func(identity, session, tool string, in map[string]any) *toolkit.Response {
		return tk.Invoke(context.Background(), toolkit.ToolCall{Name: tool, Identity: identity, Session: session, Input: in})
	}
	// 1. identity "../.." writes outside the workspace.
	r := call("../..", "escaped", builtin.WriteTextFile, map[string]any{"file_path": "pwn.txt", "content": "x"})
	if _, err := os.Stat(filepath.Join(parent, "escaped", "pwn.txt")); err == nil {
		t.Errorf("identity ../.. wrote %s outside the workspace %s (%s)", filepath.Join(parent, "escaped", "pwn.txt"), dir, r.Text())
	}
	// 2. identity ".." with session "sessions" sees every anonymous session.
	call("", "a", builtin.WriteTextFile, map[string]any{"file_path": "secret.txt", "content": "anon a secret"})
	r = call("..", "sessions", builtin.ViewTextFile, map[string]any{"file_path": "a/secret.txt"})
	if strings.Contains(r.Text(), "anon a secret") {
		t.Errorf("identity .. read anonymous session a's file: %s", r.Text())
	}
	// 3. identity "alice/b" lands inside alice's session "b".
	call("alice/b", "s", builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "of alice/b"})
	r = call("alice", "b", builtin.ViewTextFile, map[string]any{"file_path": "s/f.txt"})
	if strings.Contains(r.Text(), "of alice/b") {
		t.Errorf("identity alice session b read identity alice/b's file: %s", r.Text())
	}
}

// TestShellOutputLimitInvalidUTF8: max_output_bytes holds for output that
// is not UTF-8 (each invalid byte is sent as U+FFFD, three bytes).
func TestShellOutputLimitInvalidUTF8(t *testing.T) {
	const limit = 1000
	tk, _ := kit(t, builtin.Config{MaxOutputBytes: limit, Tools: []builtin.Tool{{Name: builtin.ExecuteShellCommand}}})
	r := invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": `i=0; while [ $i -lt 5000 ]; do printf 'a\200'; i=$((i+1)); done`})
	text := wantOK(t, r)
	body := text[:strings.Index(text, "\n[")]
	if len(body) > limit {
		t.Errorf("shell output body is %d bytes, over max_output_bytes %d (total %d)", len(body), limit, len(text))
	}
}

// TestViewLongLine: a line longer than max_output_bytes is shown cut, not
// left out (ranges select whole lines and could never show it).
func TestViewLongLine(t *testing.T) {
	tk, dir := kit(t, builtin.Config{MaxOutputBytes: 1000})
	writeFile(t, filepath.Join(dir, "long.txt"), strings.Repeat("x", 2000)+"\n")
	r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "long.txt", "ranges": []any{1, 1}})
	text := wantOK(t, r)
	if !strings.Contains(text, "xxxx") {
		t.Errorf("view of line 1 shows none of it: %q", text)
	}
}

// TestFileToolsAnswerValidUTF8: a file that is not UTF-8 (Latin-1) is
// shown with U+FFFD for its invalid bytes, as the shell tool's output is:
// a msgpack str must be UTF-8 for clients in other languages, and the
// output limit counts what is sent. An edit keeps the file's own bytes.
func TestFileToolsAnswerValidUTF8(t *testing.T) {
	tk, dir := kit(t, builtin.Config{MaxOutputBytes: 60})
	// Line 2 fits in the limit as bytes of the file, not as text sent.
	writeFile(t, filepath.Join(dir, "latin1.txt"), "caf\xe9\n"+strings.Repeat("\xe9a", 7)+"\n")
	text := wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "latin1.txt"}))
	if !utf8.ValidString(text) || !strings.Contains(text, "1: caf\uFFFD\n") {
		t.Errorf("view of a Latin-1 file: %q, want valid UTF-8 with U+FFFD", text)
	}
	if i := strings.Index(text, "\n```\n["); i < 0 || i > 60 {
		t.Errorf("view of a Latin-1 file: %q, want line 2 left out by the limit of 60 bytes", text)
	}
	text = wantOK(t, invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "latin1.txt", "content": "x", "line_number": 2}))
	if !utf8.ValidString(text) {
		t.Errorf("insert into a Latin-1 file: %q, want valid UTF-8", text)
	}
	if got, want := readFile(t, filepath.Join(dir, "latin1.txt")), "caf\xe9\nx\n"+strings.Repeat("\xe9a", 7)+"\n"; got != want {
		t.Errorf("after the insert the file is %q, want %q", got, want)
	}
}

// TestFileToolsMemoryOfManyLines: the memory of a call is bounded by a
// small multiple of the file's size, also for a file of short lines
// (a slice of lines costs 16 bytes a line on top: a 10 MiB file of
// empty lines took 190 MB to view two lines of, 360 MB to insert one).
func TestFileToolsMemoryOfManyLines(t *testing.T) {
	const size = 4 << 20
	tk, dir := kit(t, builtin.Config{})
	writeFile(t, filepath.Join(dir, "nl.txt"), strings.Repeat("\n", size))
	for _, c := range []struct {
		tool string
		in   map[string]any
	}{
		{builtin.ViewTextFile, map[string]any{"file_path": "nl.txt", "ranges": []any{-2, -1}}},
		{builtin.WriteTextFile, map[string]any{"file_path": "nl.txt", "ranges": []any{2, 3}, "content": "x\n"}},
		{builtin.InsertTextFile, map[string]any{"file_path": "nl.txt", "line_number": 5, "content": "y"}},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		wantOK(t, invoke(t, tk, c.tool, c.in))
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; n > 5*size {
			t.Errorf("%s of a %d-byte file of empty lines allocated %d bytes, over 5 times its size", c.tool, size, n)
		}
	}
	if got, want := readFile(t, filepath.Join(dir, "nl.txt")), "\nx\n\n\ny\n"+strings.Repeat("\n", size-5); got != want {
		t.Errorf("after the edits the file is %d bytes starting %q, want %d bytes starting %q", len(got), got[:10], len(want), want[:10])
	}
}

// TestPathWithTrailingSlash: a path ending in "/" names a directory. The
// file tools refused an existing directory but cleaned the slash away
// otherwise: "notes/" created a file "notes", and "f.txt/" overwrote
// f.txt (the system says "not a directory" to both).
func TestPathWithTrailingSlash(t *testing.T) {
	tk, dir := kit(t, builtin.Config{})
	writeFile(t, filepath.Join(dir, "f.txt"), "keep\n")
	for _, c := range []struct {
		tool string
		in   map[string]any
	}{
		{builtin.WriteTextFile, map[string]any{"file_path": "notes/", "content": "x"}},
		{builtin.WriteTextFile, map[string]any{"file_path": "f.txt/", "content": "x"}},
		{builtin.WriteTextFile, map[string]any{"file_path": filepath.Join(dir, "f.txt") + "/", "content": "x"}},
		{builtin.InsertTextFile, map[string]any{"file_path": "f.txt/", "content": "x", "line_number": 1}},
		{builtin.ViewTextFile, map[string]any{"file_path": "f.txt/"}},
	} {
		r := invoke(t, tk, c.tool, c.in)
		if r.State == toolkit.StateSuccess || !strings.Contains(r.Text(), `ends with "/"`) {
			t.Errorf("%s %v: %s %q, want an error saying the path ends with \"/\"", c.tool, c.in["file_path"], r.State, r.Text())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes")); err == nil {
		t.Error(`write_text_file "notes/" created a file "notes"`)
	}
	if got := readFile(t, filepath.Join(dir, "f.txt")); got != "keep\n" {
		t.Errorf(`f.txt is %q after writes to "f.txt/"`, got)
	}
	// Outside the workspace, the path is denied first.
	r := invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "../x/", "content": "x"})
	wantCode(t, r, toolkit.CodeDenied, "PathOutsideWorkspaceError")
}

// TestBinaryPastFirstBlock: a file with a NUL byte is refused as binary,
// as the package documents, also when the NUL comes after the first
// 8 KiB (only those were looked at, and the NUL was sent as text).
func TestBinaryPastFirstBlock(t *testing.T) {
	tk, dir := kit(t, builtin.Config{})
	writeFile(t, filepath.Join(dir, "late.bin"), strings.Repeat("a\n", 5000)+"\x00\n")
	r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "late.bin", "ranges": []any{-1, -1}})
	wantCode(t, r, toolkit.CodeToolError, "BinaryFileError")
}

// TestPathEndingInDot: a path whose last name is "." names a directory,
// as one ending in "/" does. Cleaning dropped the "/." and left the name
// before it: "notes/." created a file "notes", and "f.txt/." overwrote
// f.txt (the system says "not a directory", or "no such file", to both).
func TestPathEndingInDot(t *testing.T) {
	tk, dir := kit(t, builtin.Config{})
	writeFile(t, filepath.Join(dir, "f.txt"), "keep\n")
	for _, c := range []struct {
		tool string
		in   map[string]any
	}{
		{builtin.WriteTextFile, map[string]any{"file_path": "notes/.", "content": "x"}},
		{builtin.WriteTextFile, map[string]any{"file_path": "./notes/./.", "content": "x"}},
		{builtin.WriteTextFile, map[string]any{"file_path": "f.txt/.", "content": "x"}},
		{builtin.WriteTextFile, map[string]any{"file_path": filepath.Join(dir, "f.txt") + "/.", "content": "x"}},
		{builtin.WriteTextFile, map[string]any{"file_path": "f.txt/.", "content": "x", "ranges": []any{1, 1}}},
		{builtin.InsertTextFile, map[string]any{"file_path": "f.txt/.", "content": "x", "line_number": 1}},
		{builtin.ViewTextFile, map[string]any{"file_path": "f.txt/."}},
	} {
		r := invoke(t, tk, c.tool, c.in)
		if r.State == toolkit.StateSuccess || !strings.Contains(r.Text(), `ends with "/."`) {
			t.Errorf("%s %v: %s %q, want an error saying the path ends with \"/.\"", c.tool, c.in["file_path"], r.State, r.Text())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "notes")); err == nil {
		t.Error(`write_text_file "notes/." created a file "notes"`)
	}
	if got := readFile(t, filepath.Join(dir, "f.txt")); got != "keep\n" {
		t.Errorf(`f.txt is %q after writes to "f.txt/."`, got)
	}
	// "." itself is the workspace, a directory.
	wantCode(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "."}), toolkit.CodeToolError, "is not a file")
}

// TestPathEndingInDotDot: a path whose last name is ".." names a
// directory too. The walk took "notes/x/.." for "notes" when neither
// existed, and write_text_file created a file "notes" (the system says
// "no such file").
func TestPathEndingInDotDot(t *testing.T) {
	for _, c := range []struct{ path, made string }{
		{"notes/x/..", "notes"},
		{"a/b/c/..", "a/b"},
	} {
		tk, dir := kit(t, builtin.Config{})
		r := invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": c.path, "content": "x"})
		if r.State == toolkit.StateSuccess || !strings.Contains(r.Text(), `ends with "/.."`) {
			t.Errorf("write_text_file %q: %s %q, want an error saying the path ends with \"/..\"", c.path, r.State, r.Text())
		}
		if fi, err := os.Stat(filepath.Join(dir, c.made)); err == nil && fi.Mode().IsRegular() {
			t.Errorf("write_text_file %q created a file %q", c.path, c.made)
		}
	}
}
