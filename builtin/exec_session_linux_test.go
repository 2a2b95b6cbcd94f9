package builtin_test

import (
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/toolkit"
)

// A process a command starts in a process group of its own (setpgid, as
// a shell with job control or Python's process_group=0 does) but in the
// command's session outlived the call: only the command's group was
// killed, when it exited and when the call was cancelled. Everything in
// the command's session is killed; only setsid leaves it.
func TestShellKillsItsWholeSession(t *testing.T) {
	tk, _ := execKit(t, builtin.Config{})
	code := "import os, subprocess\n" +
		"p = subprocess.Popen(['sleep', '100'], preexec_fn=lambda: os.setpgid(0, 0), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n" +
		"print(f'pid={p.pid}', flush=True)\n"
	leftover := func(t *testing.T, text string) int {
		pid := childPid(t, text)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
		return pid
	}
	t.Run("exits", func(t *testing.T) {
		r := invoke(t, tk, builtin.ExecutePythonCode, map[string]any{"code": code})
		waitGone(t, leftover(t, wantOK(t, r)))
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var seen strings.Builder
		r := streamUntil(t, tk, ctx, builtin.ExecutePythonCode, map[string]any{"code": code + "p.wait()\n"}, func(s string) {
			seen.WriteString(s)
			if pidLine.MatchString(seen.String()) {
				cancel()
			}
		})
		wantCode(t, r, toolkit.CodeInterrupted)
		waitGone(t, leftover(t, r.Text()))
	})
}
