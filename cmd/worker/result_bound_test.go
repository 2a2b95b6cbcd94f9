package main_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// middleware.max_result_bytes bounds one call's output on the worker: an
// answer past it ends tool_error, saying so.
func TestMaxResultBytes(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "worker.yaml")
	mustWrite(t, cfg, "builtins:\n  workspace: "+filepath.Join(root, "ws")+"\n  tools:\n    - name: echo\nmiddleware:\n  max_result_bytes: 100\n")
	w := startWorker(t, "--config", cfg)
	if out, errOut, code := toolctl(t, w.url, "call", "echo", `{"text":"short"}`); code != 0 || !strings.Contains(out, "short") {
		t.Fatalf("a short answer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	long := strings.Repeat("y", 200)
	out, errOut, code := toolctl(t, w.url, "call", "echo", `{"text":"`+long+`"}`)
	if code == 0 || strings.Contains(out, long) || !strings.Contains(out+errOut, "ToolOutputTooLargeError") || !strings.Contains(errOut, "tool_error") {
		t.Errorf("an answer over the bound: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
