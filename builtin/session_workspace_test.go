package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

// sessionDirs lists what the workspace holds under sessions/.
func sessionDirs(t *testing.T, ws string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(ws, "sessions"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// Any call of a new session made its directory, a view of a missing file
// too, and none was ever removed: a caller cycling session names, each
// reading a missing file, grew the worker's disk and inodes without
// bound. A call that only reads makes no directory: in a session that
// has none, a file does not exist.
func TestSessionWorkspaceNotMadeByReads(t *testing.T) {
	call, ws := sessionKit(t, builtin.Config{})
	for i := range 50 {
		s := "flood-" + strconv.Itoa(i)
		wantCode(t, call(s, builtin.ViewTextFile, map[string]any{"file_path": "missing.txt"}), toolkit.CodeToolError, "Error: The file missing.txt does not exist.")
	}
	wantCode(t, call("i", builtin.InsertTextFile, map[string]any{"file_path": "missing.txt", "content": "x", "line_number": 1}),
		toolkit.CodeToolError, "The target file missing.txt does not exist.")
	r := call("r", builtin.ViewTextFile, map[string]any{"file_path": filepath.Join(ws, "sessions", "r", "sub", "f.txt")})
	wantCode(t, r, toolkit.CodeToolError, "does not exist")
	wantCode(t, call("r", builtin.ViewTextFile, map[string]any{"file_path": "."}), toolkit.CodeToolError, "is not a file")
	// The paths a session may not use are refused as ever.
	wantCode(t, call("r", builtin.ViewTextFile, map[string]any{"file_path": "../other/f.txt"}), toolkit.CodeDenied, "PathOutsideWorkspaceError")
	wantCode(t, call("r", builtin.ViewTextFile, map[string]any{"file_path": "/etc/passwd"}), toolkit.CodeDenied, "outside the workspace")
	wantCode(t, call("r", builtin.ViewTextFile, map[string]any{"file_path": "d/"}), toolkit.CodeInvalidInput, "names a directory")
	if got := sessionDirs(t, ws); len(got) != 0 {
		t.Fatalf("reads made session directories: %v", got)
	}
	// A write makes it, and the session then reads what it wrote.
	wantOK(t, call("r", builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "mine\n"}))
	wantOK(t, call("r", builtin.InsertTextFile, map[string]any{"file_path": "f.txt", "content": "first", "line_number": 1}))
	if got := wantOK(t, call("r", builtin.ViewTextFile, map[string]any{"file_path": "f.txt"})); !strings.Contains(got, "1: first\n2: mine") {
		t.Fatalf("view after the write: %s", got)
	}
	if got := sessionDirs(t, ws); len(got) != 1 || got[0] != "r" {
		t.Fatalf("session directories = %v, want [r]", got)
	}
}

// TestSessionWorkspaceNotMadeByRefusedWrites: a new session's write
// refused for its path (outside the workspace, naming a directory) made
// the session's directory all the same, taking a place of
// MaxSessionWorkspaces for a session that wrote nothing. The path is
// checked first now: no directory is made, and the error is the path's.
func TestSessionWorkspaceNotMadeByRefusedWrites(t *testing.T) {
	call, ws := sessionKit(t, builtin.Config{MaxSessionWorkspaces: 1})
	for i, c := range []struct {
		path string
		code toolkit.Code
		want string
	}{
		{"../other/f.txt", toolkit.CodeDenied, "PathOutsideWorkspaceError"},
		{"/etc/f.txt", toolkit.CodeDenied, "outside the workspace"},
		{"d/", toolkit.CodeInvalidInput, "names a directory"},
	} {
		s := "refused-" + strconv.Itoa(i)
		wantCode(t, call(s, builtin.WriteTextFile, map[string]any{"file_path": c.path, "content": "x\n"}), c.code, c.want)
	}
	if got := sessionDirs(t, ws); len(got) != 0 {
		t.Fatalf("refused writes made session directories: %v", got)
	}
	// The one place left is the first good write's.
	wantOK(t, call("good", builtin.WriteTextFile, map[string]any{"file_path": "sub/f.txt", "content": "x\n"}))
	if got := sessionDirs(t, ws); len(got) != 1 || got[0] != "good" {
		t.Fatalf("session directories = %v, want [good]", got)
	}
}

// TestSessionWorkspaceNotMadeByLongNames: a new session's write of a
// path with a name longer than the system takes (Linux's 255 bytes) made
// the session's directory, taking a place of MaxSessionWorkspaces, then
// failed "file name too long" having written nothing; the next new
// session was then refused for the limit rather than for its path. The
// name is found too long before the directory is made, with the answer a
// session that has its directory gets.
func TestSessionWorkspaceNotMadeByLongNames(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the longest name is known on Linux only")
	}
	call, ws := sessionKit(t, builtin.Config{MaxSessionWorkspaces: 1})
	long := strings.Repeat("n", 256)
	paths := []string{long + ".txt", "sub/" + long + "/f.txt", filepath.Join(ws, "sessions", "long-2", long)}
	for i, p := range paths {
		s := "long-" + strconv.Itoa(i)
		wantCode(t, call(s, builtin.WriteTextFile, map[string]any{"file_path": p, "content": "x\n"}), toolkit.CodeToolError, "file name too long")
	}
	if got := sessionDirs(t, ws); len(got) != 0 {
		t.Fatalf("writes of names too long made session directories: %v", got)
	}
	// A session that has its directory is answered the same.
	wantOK(t, call("good", builtin.WriteTextFile, map[string]any{"file_path": strings.Repeat("n", 255), "content": "x\n"}))
	for _, p := range paths[:2] {
		wantCode(t, call("good", builtin.WriteTextFile, map[string]any{"file_path": p, "content": "x\n"}), toolkit.CodeToolError, "file name too long")
	}
	if got := sessionDirs(t, ws); len(got) != 1 || got[0] != "good" {
		t.Fatalf("session directories = %v, want [good]", got)
	}
}

// TestSessionWorkspaceNotMadeByWriteToItsRoot: a new session's
// write_text_file to "." (or to the session's directory by its absolute
// path) made the session's directory, taking a place of
// MaxSessionWorkspaces, and then failed "is a directory": a place taken
// for a call that wrote nothing. The path is found to name the
// session's directory before it is made: the answer is the same, and no
// directory is made.
func TestSessionWorkspaceNotMadeByWriteToItsRoot(t *testing.T) {
	call, ws := sessionKit(t, builtin.Config{MaxSessionWorkspaces: 1})
	for i, p := range []string{".", filepath.Join(ws, "sessions", "root-1")} {
		s := "root-" + strconv.Itoa(i)
		wantCode(t, call(s, builtin.WriteTextFile, map[string]any{"file_path": p, "content": "x\n"}), toolkit.CodeToolError, "is a directory, not a regular file")
	}
	if got := sessionDirs(t, ws); len(got) != 0 {
		t.Fatalf("writes to the session's directory made session directories: %v", got)
	}
	// A session that has its directory is answered the same.
	wantOK(t, call("good", builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x\n"}))
	wantCode(t, call("good", builtin.WriteTextFile, map[string]any{"file_path": ".", "content": "x\n"}), toolkit.CodeToolError, "is a directory, not a regular file")
	if got := sessionDirs(t, ws); len(got) != 1 || got[0] != "good" {
		t.Fatalf("session directories = %v, want [good]", got)
	}
}

// TestSessionWorkspaceNotMadeByRefusedCommands: a new session's command
// refused before it runs (empty, holding a NUL byte, a timeout out of
// range) makes no directory, and answers why it was refused. One too
// long for the system to start (past Linux's 128 KiB an argument) made
// the directory, then failed: it is refused before now.
func TestSessionWorkspaceNotMadeByRefusedCommands(t *testing.T) {
	ws := t.TempDir()
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, builtin.Config{Workspace: ws, PerSessionWorkspace: true, MaxSessionWorkspaces: 1,
		Tools: []builtin.Tool{{Name: builtin.ExecuteShellCommand, Group: toolkit.BasicGroup}, {Name: builtin.ExecutePythonCode, Group: toolkit.BasicGroup}}}); err != nil {
		t.Fatal(err)
	}
	call := func(session, tool string, in map[string]any) *toolkit.Response {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return tk.Invoke(ctx, toolkit.ToolCall{ID: "c", Name: tool, Session: session, Input: in})
	}
	type refused struct {
		tool string
		in   map[string]any
		want string
	}
	cases := []refused{
		{builtin.ExecuteShellCommand, map[string]any{"command": ""}, "command is empty"},
		{builtin.ExecuteShellCommand, map[string]any{"command": "echo a\x00b"}, "NUL byte"},
		{builtin.ExecuteShellCommand, map[string]any{"command": "echo hi", "timeout": -1}, "timeout"},
		{builtin.ExecuteShellCommand, map[string]any{"command": "echo hi", "timeout": 1e9}, "timeout"},
		{builtin.ExecutePythonCode, map[string]any{"code": ""}, "code is empty"},
		{builtin.ExecutePythonCode, map[string]any{"code": "print(1)", "timeout": 1e9}, "timeout"},
	}
	if runtime.GOOS == "linux" { // 2 MiB: past 32 pages of up to 64 KiB
		cases = append(cases, refused{builtin.ExecuteShellCommand, map[string]any{"command": "echo " + strings.Repeat("a", 2<<20)}, "too long for this system to start"})
	}
	for i, c := range cases {
		s := "refused-" + strconv.Itoa(i)
		wantCode(t, call(s, c.tool, c.in), toolkit.CodeInvalidInput, c.want)
	}
	if got := sessionDirs(t, ws); len(got) != 0 {
		t.Fatalf("refused commands made session directories: %v", got)
	}
	if got := wantOK(t, call("good", builtin.ExecuteShellCommand, map[string]any{"command": "echo hi"})); !strings.HasPrefix(got, "hi\n") {
		t.Fatalf("echo hi: %s", got)
	}
	if got := sessionDirs(t, ws); len(got) != 1 || got[0] != "good" {
		t.Fatalf("session directories = %v, want [good]", got)
	}
}

// Every new session that wrote a file or ran a command made a directory,
// and none was removed: a caller cycling session names grew the
// worker's disk and inodes without bound. The workspace now holds at
// most Config.MaxSessionWorkspaces session directories: a new session
// past it gets none, its writes and commands ending unavailable with an
// error naming the limit and how to raise it; reads still answer, and
// the sessions that have a directory keep working.
func TestSessionWorkspaceLimit(t *testing.T) {
	ws := t.TempDir()
	// Directories made before the worker started count too, an
	// identity's sessions as well.
	if err := os.MkdirAll(filepath.Join(ws, "sessions", "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	call, _ := sessionKit(t, builtin.Config{Workspace: ws, MaxSessionWorkspaces: 4})
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, builtin.Config{Workspace: ws, PerSessionWorkspace: true, MaxSessionWorkspaces: 4,
		Tools: []builtin.Tool{{Name: builtin.WriteTextFile}}}); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{Name: builtin.WriteTextFile, Identity: "alice", Session: "a",
		Input: map[string]any{"file_path": "f.txt", "content": "alice's\n"}})
	wantOK(t, r)
	// Ten sessions at once for the two places left.
	var wg sync.WaitGroup
	results := make([]*toolkit.Response, 10)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = call("new-"+strconv.Itoa(i), builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x\n"})
		}()
	}
	wg.Wait()
	var made []string
	for i, r := range results {
		if r.State == toolkit.StateSuccess {
			made = append(made, "new-"+strconv.Itoa(i))
			continue
		}
		wantCode(t, r, toolkit.CodeUnavailable, "4 session directories", "MaxSessionWorkspaces", "max_session_workspaces")
	}
	if len(made) != 2 {
		t.Fatalf("%d new sessions got a directory, want 2", len(made))
	}
	if got := sessionDirs(t, ws); len(got) != 3 {
		t.Fatalf("session directories = %v, want old and two new", got)
	}
	// Past the limit a new session reads, but writes nothing and runs
	// nothing.
	wantCode(t, call("late", builtin.ExecuteShellCommand, map[string]any{"command": "echo hi"}), toolkit.CodeUnavailable, "MaxSessionWorkspaces")
	wantCode(t, call("late", builtin.ViewTextFile, map[string]any{"file_path": "f.txt"}), toolkit.CodeToolError, "does not exist")
	// The sessions that have a directory keep working.
	for _, s := range append(made, "old") {
		wantOK(t, call(s, builtin.WriteTextFile, map[string]any{"file_path": "g.txt", "content": "y\n"}))
		if got := wantOK(t, call(s, builtin.ExecuteShellCommand, map[string]any{"command": "cat g.txt"})); !strings.HasPrefix(got, "y\n") {
			t.Fatalf("session %s: %s", s, got)
		}
	}
	// A directory removed makes room for a new session, once the
	// workspace is counted again.
	if err := os.RemoveAll(filepath.Join(ws, "sessions", "old")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := call("late", builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "late\n"})
		if r.State == toolkit.StateSuccess {
			break
		}
		wantCode(t, r, toolkit.CodeUnavailable, "MaxSessionWorkspaces")
		if time.Now().After(deadline) {
			t.Fatalf("a new session is still refused after a directory was removed: %s", r.Text())
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantCode(t, call("later", builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x\n"}), toolkit.CodeUnavailable, "MaxSessionWorkspaces")
}

// MaxSessionWorkspaces -1 sets no limit: sessions past what a limit of
// one would allow still get their directories.
func TestSessionWorkspaceNoLimit(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sessions", "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	call, _ := sessionKit(t, builtin.Config{Workspace: ws, MaxSessionWorkspaces: -1})
	for i := range 5 {
		wantOK(t, call("s-"+strconv.Itoa(i), builtin.WriteTextFile, map[string]any{"file_path": "f.txt", "content": "x\n"}))
	}
	if got := sessionDirs(t, ws); len(got) != 6 {
		t.Fatalf("session directories = %v, want old and five new", got)
	}
}
