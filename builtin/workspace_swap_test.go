package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// swapForLink moves the directory dir aside and puts a symlink to
// target in its place.
func swapForLink(t *testing.T, dir, target string) {
	t.Helper()
	if err := os.Rename(dir, dir+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, dir); err != nil {
		t.Fatal(err)
	}
}

// A workspace directory swapped for a symbolic link after the worker
// started was followed: the root was opened by its path at each call, so
// the file tools read and wrote the link's target, outside the tree they
// were confined to, and the shell started there.
func TestWorkspaceSwappedForSymlink(t *testing.T) {
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret\n")
	tk, _ := kit(t, builtin.Config{Workspace: ws, Tools: allTools()})
	wantOK(t, invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "mine\n"}))
	swapForLink(t, ws, outside)

	r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "secret.txt"})
	wantCode(t, r, toolkit.CodeUnavailable, "moved or replaced")
	r = invoke(t, tk, builtin.WriteTextFile, map[string]any{"file_path": "new.txt", "content": "x\n"})
	wantCode(t, r, toolkit.CodeUnavailable, "moved or replaced")
	r = invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": "cat secret.txt"})
	wantCode(t, r, toolkit.CodeUnavailable, "moved or replaced")
	if _, err := os.Lstat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("write_text_file wrote outside the workspace")
	}
	if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "secret\n" {
		t.Fatalf("secret.txt = %q", got)
	}

	// Put back, the workspace works again.
	if err := os.Remove(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ws+".moved", ws); err != nil {
		t.Fatal(err)
	}
	if got := wantOK(t, invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "f.txt"})); !strings.Contains(got, "1: mine") {
		t.Fatalf("view after the workspace was put back: %s", got)
	}
}

// A session's directory swapped for a symbolic link to a directory
// outside the workspace became that session's workspace: it was opened,
// symlinks resolved, as a workspace of its own.
func TestSessionWorkspaceSwappedForSymlink(t *testing.T) {
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret\n")
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, builtin.Config{Workspace: ws, PerSessionWorkspace: true,
		Tools: []builtin.Tool{{Name: builtin.ViewTextFile}, {Name: builtin.WriteTextFile}}}); err != nil {
		t.Fatal(err)
	}
	call := func(tool string, in map[string]any) *toolkit.Response {
		return tk.Invoke(context.Background(), toolkit.ToolCall{Name: tool, Session: "a", Input: in})
	}
	if r := call(builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "mine\n"}); r.State != toolkit.StateSuccess {
		t.Fatalf("write: %s", r.Text())
	}
	swapForLink(t, filepath.Join(ws, "sessions", "a"), outside)
	if r := call(builtin.ViewTextFile, map[string]any{"file_path": "secret.txt"}); r.State == toolkit.StateSuccess || strings.Contains(r.Text(), "secret\n") {
		t.Fatalf("the session read outside the workspace: %s %s", r.State, r.Text())
	}
	if r := call(builtin.WriteTextFile, map[string]any{"file_path": "new.txt", "content": "x\n"}); r.State == toolkit.StateSuccess {
		t.Fatalf("the session wrote through the swapped link: %s", r.Text())
	}
	if _, err := os.Lstat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("write_text_file wrote outside the workspace")
	}
}

// A workspace removed is made again (TestWorkspaceRemovedIsMadeAgain),
// but a symbolic link put in its place is not taken for it.
func TestWorkspaceRemovedForSymlink(t *testing.T) {
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(outside, "secret.txt"), "secret\n")
	tk, _ := fileKit(t, builtin.Config{Workspace: ws})
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, ws); err != nil {
		t.Fatal(err)
	}
	r := invoke(t, tk, builtin.ViewTextFile, map[string]any{"file_path": "secret.txt"})
	wantCode(t, r, toolkit.CodeUnavailable, "moved or replaced")
}

// A workspace removed and a named pipe put in its place (rm -rf "$PWD";
// mkfifo "$PWD" from a command) was opened to be taken for the
// workspace made again, and the open waited for a writer of the pipe:
// that call hung, holding the workspace's lock, and every later call of
// the file tools and the shell hung behind it. The pipe is refused as
// another thing in the workspace's place, at once.
func TestWorkspaceRemovedForNamedPipe(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "ws")
	tk, _ := kit(t, builtin.Config{Workspace: ws, Tools: allTools()})
	if err := os.RemoveAll(ws); err != nil {
		t.Fatal(err)
	}
	if err := ostest.Mkfifo(t, ws, 0o644); err != nil {
		t.Skip("no named pipes:", err)
	}
	for _, c := range []struct {
		tool string
		in   map[string]any
	}{
		{builtin.ViewTextFile, map[string]any{"file_path": "f.txt"}},
		{builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x\n"}},
		{builtin.ExecuteShellCommand, map[string]any{"command": "echo hi"}},
	} {
		done := make(chan *toolkit.Response, 1)
		go func() { done <- invoke(t, tk, c.tool, c.in) }()
		select {
		case r := <-done:
			wantCode(t, r, toolkit.CodeUnavailable, "moved or replaced")
		case <-time.After(30 * time.Second):
			// Let the open go, so the test can end.
			if w, err := os.OpenFile(ws, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			<-done
			t.Fatalf("%s waited for a writer of the named pipe in the workspace's place", c.tool)
		}
	}
}
