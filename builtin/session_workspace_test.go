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

// sessionKit registers the file tools and the shell (in the basic
// group) with per-session workspaces over cfg, and returns a function
// calling a tool in a session.
func sessionKit(t *testing.T, cfg builtin.Config) (call func(session, tool string, in map[string]any) *toolkit.Response, ws string) {
	t.Helper()
	if cfg.Workspace == "" {
		cfg.Workspace = t.TempDir()
	}
	cfg.PerSessionWorkspace = true
	cfg.Tools = []builtin.Tool{{Name: builtin.ViewTextFile}, {Name: builtin.WriteTextFile}, {Name: builtin.InsertTextFile},
		{Name: builtin.ExecuteShellCommand, Group: toolkit.BasicGroup}}
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, cfg); err != nil {
		t.Fatal(err)
	}
	return func(session, tool string, in map[string]any) *toolkit.Response {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return tk.Invoke(ctx, toolkit.ToolCall{ID: "c", Name: tool, Session: session, Input: in})
	}, cfg.Workspace
}

// A named pipe (or any other file) where a session's directory goes
// failed the session's calls with "mkdirat sessions/a: file exists",
// which told the operator nothing of what was wrong. It now says that
// the session's workspace path is not a directory.
func TestSessionWorkspaceNotADirectory(t *testing.T) {
	call, ws := sessionKit(t, builtin.Config{})
	if err := os.MkdirAll(filepath.Join(ws, "sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ostest.Mkfifo(t, filepath.Join(ws, "sessions", "a"), 0o644); err != nil {
		t.Skip("no named pipes:", err)
	}
	writeFile(t, filepath.Join(ws, "sessions", "b"), "a file\n")
	if err := os.Symlink("a", filepath.Join(ws, "sessions", "c")); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "b", "c"} {
		for _, c := range []struct {
			tool string
			in   map[string]any
		}{
			{builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x\n"}},
			{builtin.ViewTextFile, map[string]any{"file_path": "f.txt"}},
			{builtin.ExecuteShellCommand, map[string]any{"command": "echo hi"}},
		} {
			r := call(s, c.tool, c.in)
			wantCode(t, r, toolkit.CodeUnavailable, filepath.Join("sessions", s)+" is not a directory")
			if strings.Contains(r.Text(), "file exists") {
				t.Errorf("%s in session %s: %s", c.tool, s, r.Text())
			}
		}
	}
}
