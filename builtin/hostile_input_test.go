package builtin_test

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// TestHugePathRefused: a file_path of megabytes was walked a name at a
// time (a path of 2 million "x/../" made as many system calls, seconds
// of them, without looking at the call's context) and then quoted whole
// in the error, an answer of 10 MB (30 MB for bytes shown as U+FFFD). No
// system takes a path that long: it is refused at once, unquoted.
func TestHugePathRefused(t *testing.T) {
	tk, dir := fileKit(t, builtin.Config{})
	writeFile(t, filepath.Join(dir, "f"), "keep\n")
	for name, p := range map[string]string{
		"one name":  strings.Repeat("a", 10<<20),
		"dot-dots":  strings.Repeat("x/../", 2<<20) + "f",
		"invalid":   strings.Repeat("\xff", 1<<20),
		"just over": strings.Repeat("a/", 2048) + "f",
	} {
		for _, c := range []struct {
			tool string
			in   map[string]any
		}{
			{builtin.ViewTextFile, map[string]any{"file_path": p}},
			{builtin.WriteTextFile, map[string]any{"file_path": p, "content": "x"}},
			{builtin.InsertTextFile, map[string]any{"file_path": p, "content": "x", "line_number": 1}},
		} {
			r := invoke(t, tk, c.tool, c.in)
			wantCode(t, r, toolkit.CodeInvalidInput, "InvalidPathError", "4096 bytes")
			if n := len(r.Text()); n > 1000 {
				t.Errorf("%s %s: the answer is %d bytes: %.200q", c.tool, name, n, r.Text())
			}
		}
	}
	// A long path within the limit is still a path.
	p := strings.Repeat("./", 2000) + "f"
	if got := wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": p})); !strings.Contains(got, "1: keep") {
		t.Errorf("view %d-byte path: %q", len(p), got)
	}
}

// TestNonUTF8PathAnswersValidUTF8: a file_path that is not UTF-8 (a
// Latin-1 name, which a msgpack caller can send) was written into the
// answers as it came, and an answer that is not UTF-8 is no msgpack str
// for a client in another language. The toolkit hands a typed tool its
// input as encoding/json decodes it, so every file tool gets the path
// with its invalid bytes as U+FFFD and names (and uses) that one file:
// insert_text_file no longer edits the Latin-1 file that write_text_file
// and view_text_file do not see.
func TestNonUTF8PathAnswersValidUTF8(t *testing.T) {
	tk, dir := fileKit(t, builtin.Config{})
	name := "caf\xe9.txt"
	writeFile(t, filepath.Join(dir, name), "latin-1\n")
	writeFile(t, filepath.Join(dir, "caf\uFFFD.txt"), "a\n")
	for _, in := range []map[string]any{
		{"file_path": name, "content": "x", "line_number": 1},
		{"file_path": name, "content": "x", "line_number": 9},
	} {
		r := invoke(t, tk, builtin.InsertTextFile, in)
		if r.State != toolkit.StateSuccess { // AgentScope's out-of-range text names no file
			if !utf8.ValidString(r.Text()) {
				t.Errorf("insert %v: %s %q, want valid UTF-8", in["line_number"], r.State, r.Text())
			}
			continue
		}
		if !utf8.ValidString(r.Text()) || !strings.Contains(r.Text(), "caf\uFFFD.txt") {
			t.Errorf("insert %v: %s %q, want valid UTF-8 naming caf\uFFFD.txt", in["line_number"], r.State, r.Text())
		}
	}
	if got := readFile(t, filepath.Join(dir, "caf\uFFFD.txt")); got != "x\na\n" {
		t.Errorf("caf\uFFFD.txt holds %q after the insert", got)
	}
	if got := wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": name})); !strings.Contains(got, "1: x") {
		t.Errorf("view %q after the insert: %q", name, got)
	}
	if got := readFile(t, filepath.Join(dir, name)); got != "latin-1\n" {
		t.Errorf("%q holds %q: a typed tool used the path's invalid bytes", name, got)
	}
}
