package main_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionsKillMidCommand: the worker running a session's command
// that writes a file is killed (SIGKILL) halfway. The caller is told
// worker_lost, and the command goes with its worker: it does not go on
// writing the session's files while the session's next calls run on
// another worker, which shows them as the command left them.
func TestSessionsKillMidCommand(t *testing.T) {
	host := filepath.Join(t.TempDir(), "host.yaml")
	mustWrite(t, host, "builtins:\n  tools: [{name: sleep}]\n")
	url := startWorker(t, "--instance", "w0", "--config", host).url
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "w.yaml")
	mustWrite(t, cfg, fmt.Sprintf(`builtins:
  workspace: %s
  shared_workspace: true
  tools: [{name: execute_shell_command, group: basic}, {name: view_text_file}]
`, dir))
	w1 := startWorker(t, "--config", cfg, "--instance", "w1", "--nats", url)

	c, err := bus.NewClient(natstest.URLConn(t, url), &bus.ClientOptions{Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Cleanup(func() { os.WriteFile(filepath.Join(dir, "go"), nil, 0o644) }) // whatever happened, the command ends
	done := make(chan *toolkit.Response, 1)
	go func() {
		done <- callOnce(t, secureCtx(t), c, toolkit.ToolCall{ID: "write1", Name: "execute_shell_command", Session: "s1",
			Input: map[string]any{"command": "echo $$ > pid.txt; echo one > f.txt; while [ ! -e go ]; do sleep 0.05; done; echo two >> f.txt"}})
	}()
	var pid int
	natstest.WaitFor(t, "the command to write", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "pid.txt"))
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false
		}
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		f, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
		return pid > 0 && string(f) == "one\n"
	})
	t.Cleanup(func() { ostest.Kill(pid, syscall.SIGKILL) })
	w1.cmd.Process.Kill()
	w1.exit(t)
	if r := <-done; r.Code != toolkit.CodeWorkerLost {
		t.Fatalf("the killed worker's call: %s %q", r.Code, r.Text())
	}
	natstest.WaitFor(t, "the command to end with its worker", func() bool { return gone(pid) })

	// The session goes on on another worker; the file is as the command
	// left it, also once what the command waited for comes.
	startWorker(t, "--config", cfg, "--instance", "w2", "--nats", url)
	mustWrite(t, filepath.Join(dir, "go"), "")
	if r := callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "view_text_file", Session: "s1",
		Input: map[string]any{"file_path": "f.txt"}}); r.Code != "" || !strings.Contains(r.Text(), "one") || strings.Contains(r.Text(), "two") {
		t.Fatalf("the session's file after the kill: %s %q", r.Code, r.Text())
	}
}
