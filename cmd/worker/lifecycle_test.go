package main_test

import (
	"strings"
	"syscall"
	"testing"
)

// TestHangupStopsGracefully: SIGHUP (the terminal a worker was started
// from closes, or an operator who expects a reload) stops the worker as
// SIGTERM does: the running call finishes within the grace period and
// gets its final, and the worker exits 0. Go's default for SIGHUP killed
// the worker at once: its calls were lost.
func TestHangupStopsGracefully(t *testing.T) {
	w := startWorker(t) // grace 30s
	call := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":2}`)
	if _, ok := call.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress:\n%s", call.stderr)
	}
	if err := w.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := call.exit(t); code != 0 {
		t.Errorf("the running call: toolctl exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, call.stdout, call.stderr)
	}
	if code := w.exit(t); code != 0 {
		t.Errorf("worker exit %d after SIGHUP, want 0 (a graceful stop)\n%s", code, w.stderr)
	}
	if !strings.Contains(w.stderr.String(), `"signal":"hangup"`) {
		t.Errorf("the worker did not log draining on SIGHUP:\n%s", w.stderr)
	}
}
