package builtin_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// session is the session the helpers call with; kit activates the exec
// group for it.
const session = "s1"

// kit returns a toolkit with cfg's built-ins registered, the exec group
// (if any) active for session, and cfg.Workspace filled in with a fresh
// directory when empty.
func kit(t *testing.T, cfg builtin.Config) (*toolkit.Toolkit, string) {
	t.Helper()
	if cfg.Workspace == "" {
		cfg.Workspace = t.TempDir()
	}
	tk := toolkit.New(nil)
	if err := builtin.Register(tk, cfg); err != nil {
		t.Fatalf("Register: %v", err)
	}
	for _, g := range tk.Groups() {
		if g.Name == builtin.ExecGroup {
			r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "activate", Name: toolkit.MetaToolName, Session: session, Input: map[string]any{builtin.ExecGroup: true}})
			if r.State != toolkit.StateSuccess {
				t.Fatalf("reset_tools: %s %s", r.State, r.Text())
			}
		}
	}
	return tk, cfg.Workspace
}

func allTools() []builtin.Tool {
	var ts []builtin.Tool
	for _, n := range builtin.Names {
		ts = append(ts, builtin.Tool{Name: n})
	}
	return ts
}

// invoke runs one call with a never-hangs guard.
func invoke(t *testing.T, tk *toolkit.Toolkit, name string, input map[string]any) *toolkit.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return tk.Invoke(ctx, toolkit.ToolCall{ID: "c-" + name, Name: name, Input: input, Session: session})
}

// wantOK fails unless r succeeded.
func wantOK(t *testing.T, r *toolkit.Response) string {
	t.Helper()
	if r.State != toolkit.StateSuccess {
		t.Fatalf("state %s code %s: %s", r.State, r.Code, r.Text())
	}
	return r.Text()
}

// wantCode fails unless r ended with code and its text holds every
// fragment.
func wantCode(t *testing.T, r *toolkit.Response, code toolkit.Code, fragments ...string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("code = %q (state %s), want %q: %s", r.Code, r.State, code, r.Text())
	}
	for _, f := range fragments {
		if !strings.Contains(r.Text(), f) {
			t.Errorf("text %q does not contain %q", r.Text(), f)
		}
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// processGone reports whether pid no longer runs: it does not exist, or it
// is a zombie waiting for a parent that does not reap.
func processGone(pid int) bool {
	if err := ostest.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X')
}

// waitGone fails if pid still runs after a generous guard period.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
