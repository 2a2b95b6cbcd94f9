package main_test

import (
	"strings"
	"syscall"
	"testing"
)

// TestCallHangupCancels: a call whose terminal closes (SIGHUP: the
// window closed, the ssh connection dropped) was killed by the signal
// without a cancel, so the tool ran on to its end unseen (a shell
// command for up to its max_timeout); toolctl call now treats SIGHUP as
// it does SIGINT and SIGTERM. Started with SIGHUP ignored (nohup), it
// keeps ignoring it.
func TestCallHangupCancels(t *testing.T) {
	w := startWorker(t)

	sleep := startProc(t, cleanEnv(t), toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":60}`)
	if _, ok := sleep.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress from sleep:\n%s", sleep.stderr)
	}
	if err := sleep.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := sleep.exit(t); code != 4 || !strings.Contains(sleep.stderr.String(), "ended interrupted (code interrupted)") {
		t.Errorf("sleep after SIGHUP: exit %d, want 4 (interrupted)\nstderr:\n%s", code, sleep.stderr)
	}

	// nohup toolctl call …: the hang-up is not toolctl's to act on.
	nohup := startProc(t, cleanEnv(t), "/bin/sh", "-c", `trap "" HUP; exec "$0" "$@"`, toolctlBin, "--nats", w.url, "call", "sleep", `{"seconds":2}`)
	if _, ok := nohup.stderr.wait(func(s string) bool { return strings.HasPrefix(s, "progress ") }); !ok {
		t.Fatalf("no progress from sleep:\n%s", nohup.stderr)
	}
	if err := nohup.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if code := nohup.exit(t); code != 0 || !strings.Contains(nohup.stdout.String(), "Slept for 2 seconds") {
		t.Errorf("sleep under nohup after SIGHUP: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, nohup.stdout, nohup.stderr)
	}
}
