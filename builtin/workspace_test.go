package builtin_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// confined lays out a workspace next to an outside directory:
//
//	base/outside/secret.txt            must stay unreadable and unchanged
//	base/ws/inside.txt
//	base/ws/sub/deep.txt
//	base/ws/link-out -> ../outside      (relative, escapes)
//	base/ws/abs-out -> base/outside     (absolute, escapes)
//	base/ws/file-out -> ../outside/secret.txt
//	base/ws/dangling-out -> ../outside/new.txt (target missing)
//	base/ws/link-in -> sub              (relative, stays inside)
//	base/ws/abs-in -> base/ws/sub       (absolute, stays inside)
//	base/ws/file-in -> sub/deep.txt
//	base/ws/loop -> loop
func confined(t *testing.T) (tk *toolkit.Toolkit, ws, outside string) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	for _, d := range []string{ws, outside, filepath.Join(ws, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret\n")
	writeFile(t, filepath.Join(ws, "inside.txt"), "inside\n")
	writeFile(t, filepath.Join(ws, "sub", "deep.txt"), "deep\n")
	links := map[string]string{
		"link-out":     "../outside",
		"abs-out":      outside,
		"file-out":     "../outside/secret.txt",
		"dangling-out": "../outside/new.txt",
		"link-in":      "sub",
		"abs-in":       filepath.Join(ws, "sub"),
		"file-in":      "sub/deep.txt",
		"loop":         "loop",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	tk, _ = fileKit(t, builtin.Config{Workspace: ws})
	return tk, ws, outside
}

func TestWorkspaceConfinement(t *testing.T) {
	tk, ws, outside := confined(t)
	escapes := []struct {
		name string
		path string
		why  string
	}{
		{"dot-dot", "../outside/secret.txt", `".." components lead out`},
		{"dot-dot after a directory", "sub/../../outside/secret.txt", `".." components lead out`},
		{"dot-dot to the parent", "..", `".." components lead out`},
		{"absolute outside", filepath.Join(outside, "secret.txt"), "absolute path outside"},
		{"absolute system file", "/etc/passwd", "absolute path outside"},
		{"absolute dot-dot out", filepath.Join(ws, "..", "outside", "secret.txt"), "absolute path outside"},
		{"symlinked directory out", "link-out/secret.txt", "symbolic link"},
		{"absolute symlink out", "abs-out/secret.txt", "symbolic link"},
		{"symlinked file out", "file-out", "symbolic link"},
		{"new file under a symlink out", "link-out/new.txt", "symbolic link"},
		{"dot-dot through a symlink", "link-in/../../outside/secret.txt", `".." components lead out`},
		{"symlink out after a missing directory and dot-dot", "missing/../link-out/secret.txt", "symbolic link"},
	}
	calls := []struct {
		tool  string
		input map[string]any
	}{
		{builtin.ViewTextFile, map[string]any{}},
		{builtin.WriteTextFile, map[string]any{"content": "pwned\n"}},
		{builtin.WriteTextFile, map[string]any{"content": "pwned\n", "ranges": []any{1, 1}}},
		{builtin.InsertTextFile, map[string]any{"content": "pwned\n", "line_number": 1}},
	}
	for _, e := range escapes {
		for _, c := range calls {
			t.Run(e.name+"/"+c.tool, func(t *testing.T) {
				input := map[string]any{"file_path": e.path}
				for k, v := range c.input {
					input[k] = v
				}
				r := invoke(t, tk, c.tool, input)
				wantCode(t, r, toolkit.CodeDenied, "PathOutsideWorkspaceError", e.why, "inside the workspace")
				if r.State != toolkit.StateDenied {
					t.Errorf("state = %s, want denied", r.State)
				}
			})
		}
	}
	if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "secret\n" {
		t.Errorf("outside file changed: %q", got)
	}
	for _, name := range []string{"new.txt"} {
		if _, err := os.Lstat(filepath.Join(outside, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a file was created outside the workspace: %s", name)
		}
	}
}

// A write through a dangling symlink would create its target outside the
// workspace; it is refused before anything is created.
func TestWorkspaceDanglingSymlink(t *testing.T) {
	tk, _, outside := confined(t)
	for _, c := range []struct {
		tool  string
		input map[string]any
	}{
		{builtin.ViewTextFile, map[string]any{"file_path": "dangling-out"}},
		{builtin.WriteTextFile, map[string]any{"file_path": "dangling-out", "content": "pwned"}},
		{builtin.WriteTextFile, map[string]any{"file_path": "dangling-out/x", "content": "pwned"}},
	} {
		wantCode(t, invoke(t, tk, c.tool, c.input), toolkit.CodeToolError, "symbolic link that cannot be resolved")
	}
	r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "loop"})
	wantCode(t, r, toolkit.CodeToolError, "cannot be resolved")
	if _, err := os.Lstat(filepath.Join(outside, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("the dangling link's target was created outside the workspace")
	}
}

func TestWorkspaceInsideIsFine(t *testing.T) {
	tk, ws, _ := confined(t)
	reads := []struct {
		path string
		want string
	}{
		{"inside.txt", "1: inside"},
		{"./sub/../inside.txt", "1: inside"},
		{filepath.Join(ws, "inside.txt"), "1: inside"},
		{"link-in/deep.txt", "1: deep"},
		{"abs-in/deep.txt", "1: deep"},
		{"file-in", "1: deep"},
		{filepath.Join(ws, "link-in", "deep.txt"), "1: deep"},
	}
	for _, tt := range reads {
		t.Run("view "+tt.path, func(t *testing.T) {
			r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": tt.path})
			if got := wantOK(t, r); !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}
	t.Run("write through an inside symlink", func(t *testing.T) {
		wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "link-in/new.txt", "content": "new\n"}))
		if got := readFile(t, filepath.Join(ws, "sub", "new.txt")); got != "new\n" {
			t.Errorf("file = %q", got)
		}
		wantOK(t, invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "abs-in/new.txt", "content": "first", "line_number": 1}))
		if got := readFile(t, filepath.Join(ws, "sub", "new.txt")); got != "first\nnew\n" {
			t.Errorf("file = %q", got)
		}
	})
}

// The workspace may itself be reached through a symlink; absolute paths
// under either spelling are accepted.
func TestWorkspaceBehindSymlink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	alias := filepath.Join(base, "alias")
	if err := os.Symlink(real, alias); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(real, "f.txt"), "x\n")
	tk, _ := fileKit(t, builtin.Config{Workspace: alias})
	for _, p := range []string{"f.txt", filepath.Join(alias, "f.txt"), filepath.Join(real, "f.txt")} {
		wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": p}))
	}
	r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": filepath.Join(base, "f.txt")})
	wantCode(t, r, toolkit.CodeDenied, "outside the workspace")
}

// TestPerSessionWorkspace: with per-session workspaces two sessions (and
// two identities' sessions of the same name) never see each other's
// files, and a session cannot reach another's directory.
func TestPerSessionWorkspace(t *testing.T) {
	dir := t.TempDir()
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, builtin.Config{Workspace: dir, PerSessionWorkspace: true,
		Tools: []builtin.Tool{{Name: builtin.ViewTextFile}, {Name: builtin.WriteTextFile}, {Name: builtin.ExecuteShellCommand, Group: toolkit.BasicGroup}}}); err != nil {
		t.Fatal(err)
	}
	call := func(identity, session, tool string, in map[string]any) *toolkit.Response {
		return tk.Invoke(context.Background(), toolkit.ToolCall{Name: tool, Identity: identity, Session: session, Input: in})
	}
	for _, s := range []struct{ identity, session string }{{"", "a"}, {"", "b"}, {"alice", "a"}, {"", ""}, {"", "a b/../c"}} {
		if r := call(s.identity, s.session, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "of " + s.identity + "/" + s.session}); r.State != toolkit.StateSuccess {
			t.Fatalf("%v: write: %s", s, r.Text())
		}
	}
	for _, s := range []struct{ identity, session string }{{"", "a"}, {"", "b"}, {"alice", "a"}, {"", ""}, {"", "a b/../c"}} {
		if r := call(s.identity, s.session, builtin.ViewTextFile, map[string]any{"file_path": "f.txt"}); !strings.Contains(r.Text(), "of "+s.identity+"/"+s.session+"\n") {
			t.Fatalf("%v: read %q", s, r.Text())
		}
	}
	for _, want := range []string{"sessions/a/f.txt", "sessions/b/f.txt", "identities/alice/a/f.txt", "sessions/=/f.txt"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("%s: %v", want, err)
		}
	}
	// Confined to its own directory.
	if r := call("", "b", builtin.ViewTextFile, map[string]any{"file_path": "../a/f.txt"}); r.State == toolkit.StateSuccess {
		t.Fatalf("session b read session a's file: %s", r.Text())
	}
	if r := call("", "b", builtin.ViewTextFile, map[string]any{"file_path": filepath.Join(dir, "sessions/a/f.txt")}); r.State == toolkit.StateSuccess {
		t.Fatalf("session b read session a's file by its absolute path: %s", r.Text())
	}
	// The shell starts there too.
	if r := call("", "b", builtin.ExecuteShellCommand, map[string]any{"command": "cat f.txt"}); !strings.Contains(r.Text(), "of /b") {
		t.Fatalf("shell in session b: %s", r.Text())
	}
}

// A command that removes the workspace directory itself (rm -rf "$PWD")
// broke every later call of the file, shell and Python tools until the
// worker restarted: the shell could not start in it ("cannot start
// /bin/sh: no such file or directory") and the file tools could not open
// it, so not even a session could repair it. A call that finds the
// workspace missing makes it again.
func TestWorkspaceRemovedIsMadeAgain(t *testing.T) {
	tk, ws := kit(t, builtin.Config{Tools: allTools()})
	r := invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": `rm -rf "$PWD" && echo removed`})
	if got := wantOK(t, r); !strings.Contains(got, "removed") {
		t.Fatalf("rm: %s", got)
	}
	if _, err := os.Stat(ws); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the workspace is still there: %v", err)
	}
	if got := wantOK(t, invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": "pwd"})); !strings.Contains(got, ws) {
		t.Errorf("shell after the workspace was removed: %s", got)
	}
	os.RemoveAll(ws)
	wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x"}))
	if got := readFile(t, filepath.Join(ws, "f.txt")); got != "x" {
		t.Errorf("file = %q", got)
	}
	os.RemoveAll(ws)
	wantCode(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "f.txt"}), toolkit.CodeToolError, "does not exist")
}

// A ".." after a symbolic link is the parent of the link's target, as
// the system (and the shell tool) reads the path. The path was cleaned
// first, which dropped the link and its "..": "deep/../x.txt", with deep
// a link to sub/inner, named sub/x.txt to the system but x.txt to the
// file tools, which showed and edited that other file.
func TestWorkspaceDotDotAfterSymlink(t *testing.T) {
	tk, ws := kit(t, builtin.Config{Tools: allTools()})
	if err := os.MkdirAll(filepath.Join(ws, "sub", "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "x.txt"), "top\n")
	writeFile(t, filepath.Join(ws, "sub", "x.txt"), "sub\n")
	if err := os.Symlink(filepath.Join("sub", "inner"), filepath.Join(ws, "deep")); err != nil {
		t.Fatal(err)
	}
	if got := wantOK(t, invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": "cat deep/../x.txt"})); !strings.HasPrefix(got, "sub\n") {
		t.Fatalf("the shell reads deep/../x.txt as %q", got)
	}
	if got := wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "deep/../x.txt"})); !strings.Contains(got, "1: sub\n") {
		t.Errorf("view deep/../x.txt: %s", got)
	}
	wantOK(t, invoke(t, tk, builtin.InsertTextFile, map[string]any{"file_path": "deep/../x.txt", "line_number": 1, "content": "new"}))
	wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": ws + "/deep/../y.txt", "content": "y\n"}))
	for path, want := range map[string]string{"x.txt": "top\n", "sub/x.txt": "new\nsub\n", "sub/y.txt": "y\n"} {
		if got := readFile(t, filepath.Join(ws, path)); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}
