package builtin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

func execKit(t *testing.T, cfg builtin.Config) (*toolkit.Toolkit, string) {
	t.Helper()
	cfg.Tools = []builtin.Tool{{Name: builtin.ExecuteShellCommand}, {Name: builtin.ExecutePythonCode}}
	return kit(t, cfg)
}

func TestShellResults(t *testing.T) {
	tk, ws := execKit(t, builtin.Config{MaxOutputBytes: 100})
	writeFile(t, filepath.Join(ws, "here.txt"), "in the workspace\n")
	tests := []struct {
		name     string
		input    map[string]any
		wantText string
		wantExit int
	}{
		{"stdout", map[string]any{"command": "echo hello; echo world"}, "hello\nworld\n<returncode>0</returncode>", 0},
		{"stderr is interleaved", map[string]any{"command": "echo out; echo err >&2; echo out2"}, "out\nerr\nout2\n<returncode>0</returncode>", 0},
		{"exit code", map[string]any{"command": "echo failing; exit 3"}, "failing\n<returncode>3</returncode>", 3},
		{"no trailing newline", map[string]any{"command": "printf abc"}, "abc\n<returncode>0</returncode>", 0},
		{"no output", map[string]any{"command": "true"}, "<returncode>0</returncode>", 0},
		{"runs in the workspace", map[string]any{"command": "cat here.txt"}, "in the workspace\n<returncode>0</returncode>", 0},
		{"killed by a signal", map[string]any{"command": "kill -9 $$"}, "<returncode>-9</returncode>", -9},
		{"output limit", map[string]any{"command": "yes | head -c 1000"},
			strings.Repeat("y\n", 50) + "[900 bytes of output omitted: the limit is 100 bytes]\n<returncode>0</returncode>", 0},
		{"invalid UTF-8 is replaced", map[string]any{"command": `printf 'a\377b\n'`}, "a\uFFFDb\n<returncode>0</returncode>", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := invoke(t, tk, builtin.ExecuteShellCommand, tt.input)
			if got := wantOK(t, r); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			if got := r.Metadata["exit_code"]; got != tt.wantExit {
				t.Errorf("exit_code = %v, want %d", got, tt.wantExit)
			}
		})
	}
}

func TestShellBadInput(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{MaxTimeout: time.Minute})
	tests := []struct {
		name  string
		input map[string]any
		frag  string
	}{
		{"missing command", map[string]any{}, "command"},
		{"empty command", map[string]any{"command": ""}, "command is empty"},
		// The system refuses the argument, which was reported as a
		// tool_error "cannot start /bin/sh: invalid argument".
		{"NUL in the command", map[string]any{"command": "echo a\x00b"}, "NUL"},
		// Linux takes at most 128 KiB in one argument: "cannot start
		// /bin/sh: fork/exec /bin/sh: argument list too long", a
		// tool_error that said neither what was long nor what to do.
		{"command too long for the system", map[string]any{"command": "echo " + strings.Repeat("x", 200<<10)}, "write_text_file"},
		{"command not a string", map[string]any{"command": 42}, "command"},
		{"negative timeout", map[string]any{"command": "true", "timeout": -1}, "timeout"},
		{"timeout above max", map[string]any{"command": "true", "timeout": 61}, "timeout"},
		{"unknown argument", map[string]any{"command": "true", "cwd": "/"}, "cwd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, invoke(t, tk, builtin.ExecuteShellCommand, tt.input), toolkit.CodeInvalidInput, tt.frag)
		})
	}
}

// streamUntil runs a call and hands each chunk's text to onChunk, which
// may cancel the call; it returns the final response.
func streamUntil(t *testing.T, tk *toolkit.Toolkit, ctx context.Context, name string, input map[string]any, onChunk func(string)) *toolkit.Response {
	t.Helper()
	guard, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	var final *toolkit.Response
	for ev := range tk.Call(guard, toolkit.ToolCall{ID: "stream", Name: name, Input: input, Session: session}) {
		switch {
		case ev.Chunk != nil:
			for _, b := range ev.Chunk.Content {
				onChunk(b.Text)
			}
		case ev.Final != nil:
			final = ev.Final
		}
	}
	if final == nil {
		t.Fatal("no final response")
	}
	return final
}

var pidLine = regexp.MustCompile(`(?m)^pid=(\d+)$`)

// childPid extracts the pid a command printed as "pid=N".
func childPid(t *testing.T, text string) int {
	t.Helper()
	m := pidLine.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no pid in %q", text)
	}
	pid, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// The output arrives while the command still runs (the command only ends
// when cancelled), and cancelling kills the command's children too.
func TestShellCancelKillsChildren(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen strings.Builder
	r := streamUntil(t, tk, ctx, builtin.ExecuteShellCommand,
		map[string]any{"command": "sleep 100 & echo pid=$!; wait"},
		func(s string) {
			seen.WriteString(s)
			if pidLine.MatchString(seen.String()) {
				cancel()
			}
		})
	wantCode(t, r, toolkit.CodeInterrupted, "pid=", toolkit.InterruptedText)
	if r.State != toolkit.StateInterrupted {
		t.Errorf("state = %s, want interrupted", r.State)
	}
	waitGone(t, childPid(t, r.Text()))
}

func TestShellTimeoutKillsChildren(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	// The timeout gives the command time to print the pid on a loaded
	// machine.
	r := invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": "sleep 100 & echo pid=$!; wait", "timeout": 3})
	wantCode(t, r, toolkit.CodeTimeout, "pid=", "exceeded the timeout of 3 seconds")
	if r.State != toolkit.StateError {
		t.Errorf("state = %s, want error", r.State)
	}
	waitGone(t, childPid(t, r.Text()))
}

// A call's own deadline (a timeout middleware, the bus) is honoured too.
func TestShellContextDeadline(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // time to print the pid, loaded
	defer cancel()
	r := streamUntil(t, tk, ctx, builtin.ExecuteShellCommand, map[string]any{"command": "sleep 100 & echo pid=$!; wait"}, func(string) {})
	wantCode(t, r, toolkit.CodeTimeout)
	waitGone(t, childPid(t, r.Text()))
}

// What a command leaves running in the background is killed when it
// exits, whether or not the leftover holds the output pipes.
func TestShellKillsLeftovers(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	for name, cmd := range map[string]string{
		"holding the pipes":   "sleep 100 & echo pid=$!",
		"output redirected":   "sleep 100 >/dev/null 2>&1 & echo pid=$!",
		"orphaned grandchild": "sh -c 'sleep 100 & echo pid=$!'",
	} {
		t.Run(name, func(t *testing.T) {
			r := invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": cmd})
			wantOK(t, r)
			waitGone(t, childPid(t, r.Text()))
		})
	}
}

func TestPython(t *testing.T) {
	tk, ws := execKit(t, builtin.Config{})
	writeFile(t, filepath.Join(ws, "data.txt"), "42")
	tests := []struct {
		name     string
		code     string
		want     []string
		wantExit int
	}{
		{"print", "print('hello')\nprint(6*7)", []string{"hello\n42\n<returncode>0</returncode>"}, 0},
		{"exception", "raise ValueError('boom')", []string{"Traceback", "ValueError: boom", "<returncode>1</returncode>"}, 1},
		{"exit code", "import sys\nsys.exit(5)", []string{"<returncode>5</returncode>"}, 5},
		{"runs in the workspace", "print(open('data.txt').read())", []string{"42\n<returncode>0</returncode>"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := invoke(t, tk, builtin.ExecutePythonCode, map[string]any{"code": tt.code})
			got := wantOK(t, r)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("text %q does not contain %q", got, w)
				}
			}
			if r.Metadata["exit_code"] != tt.wantExit {
				t.Errorf("exit_code = %v, want %d", r.Metadata["exit_code"], tt.wantExit)
			}
		})
	}
}

func TestPythonCancel(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	code := "import subprocess\np = subprocess.Popen(['sleep', '100'])\nprint(f'pid={p.pid}', flush=True)\np.wait()"
	var seen strings.Builder
	r := streamUntil(t, tk, ctx, builtin.ExecutePythonCode, map[string]any{"code": code}, func(s string) {
		seen.WriteString(s)
		if pidLine.MatchString(seen.String()) {
			cancel()
		}
	})
	wantCode(t, r, toolkit.CodeInterrupted)
	waitGone(t, childPid(t, r.Text()))
}

func TestPythonMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // a PATH without python3
	tk, _ := execKit(t, builtin.Config{})
	r := invoke(t, tk, builtin.ExecutePythonCode, map[string]any{"code": "print(1)"})
	wantCode(t, r, toolkit.CodeToolError, "PythonNotFoundError", `"python3" was not found`)
}

func TestPythonTempFileRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	tk, _ := execKit(t, builtin.Config{})
	wantOK(t, invoke(t, tk, builtin.ExecutePythonCode, map[string]any{"code": "print(1)"}))
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

// Without activation the exec group's tools are refused.
func TestExecGroupInactiveByDefault(t *testing.T) {
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, builtin.Config{Workspace: t.TempDir(), Tools: allTools()}); err != nil {
		t.Fatal(err)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: builtin.ExecuteShellCommand, Input: map[string]any{"command": "true"}, Session: "other"})
	wantCode(t, r, toolkit.CodeGroupInactive)
	for _, s := range tk.Schemas(nil) {
		if s.Function.Name == builtin.ExecuteShellCommand || s.Function.Name == builtin.ExecutePythonCode {
			t.Errorf("%s listed while its group is inactive", s.Function.Name)
		}
	}
}

// A command that moves itself out of its process group (into the
// worker's, which a process of the same session may join) is still
// killed when its timeout passes: the group kill missed it, cmd.Wait
// waited for it, and the call never ended, nor did a cancel end it.
// A command now leads a session of its own, so the kernel refuses the
// move ("stayed"); the kill of the command itself covers it should
// that change.
func TestShellTimeoutKillsCommandThatLeftItsGroup(t *testing.T) {
	if _, err := exec.LookPath("perl"); err != nil {
		t.Skip("no perl:", err)
	}
	tk, ws := execKit(t, builtin.Config{})
	t.Cleanup(func() { // whatever happened, the command does not outlive the test
		if b, err := os.ReadFile(filepath.Join(ws, "pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = ostest.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	done := make(chan *toolkit.Response, 1)
	go func() {
		// The timeout leaves perl time to start and move even on a busy
		// machine (at 0.5 s it sometimes had not printed "moved" yet).
		done <- invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"timeout": 3,
			"command": `echo $$ >pid; echo pid=$$; exec perl -e '$| = 1; print setpgrp(0, getpgrp(getppid())) ? "moved\n" : "stayed\n"; sleep 1000'`})
	}()
	var r *toolkit.Response
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end 30s after its timeout of 3s")
	}
	wantCode(t, r, toolkit.CodeTimeout)
	if !strings.Contains(r.Text(), "moved\n") && !strings.Contains(r.Text(), "stayed\n") {
		t.Errorf("perl did not get to try the move: %q", r.Text())
	}
	waitGone(t, childPid(t, r.Text()))
}

// The code's file is the script Python runs, and Python puts the script's
// directory first on sys.path: in the shared temporary directory, where
// anyone may write, a module placed there by another user was imported
// instead of the one the code asked for. The file lives in a directory of
// its own.
func TestPythonImportsNothingFromTempDir(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	writeFile(t, filepath.Join(tmp, "json.py"), "print('planted module imported')\n")
	tk, _ := execKit(t, builtin.Config{})
	r := invoke(t, tk, builtin.ExecutePythonCode, map[string]any{"code": "import json\nprint(json.dumps([1]))"})
	got := wantOK(t, r)
	if strings.Contains(got, "planted") || !strings.Contains(got, "[1]\n<returncode>0</returncode>") {
		t.Errorf("the code imported a module from the temporary directory: %q", got)
	}
}
