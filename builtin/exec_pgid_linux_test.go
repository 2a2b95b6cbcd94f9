package builtin

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A command's process group and session are named by its leader's pid,
// which the system may give another process once the leader is reaped
// and the group empty (after a PID wrap). The group and the session
// were signalled after cmd.Wait had reaped the leader (the leftovers'
// kill at the command's end, and a cancel or timeout while the output
// was still read), when the number may already name someone else's
// group. They are now signalled only while the leader is an unreaped
// child, which holds the number: /proc/<pgid> exists at every signal.
func TestGroupSignalledOnlyWhileLeaderHeld(t *testing.T) {
	orig := signalGroup
	var mu sync.Mutex
	var signals int
	var stray []int
	signalGroup = func(pgid int) {
		mu.Lock()
		signals++
		if _, err := os.Stat("/proc/" + strconv.Itoa(pgid)); err != nil {
			stray = append(stray, pgid)
		}
		mu.Unlock()
		orig(pgid)
	}
	t.Cleanup(func() { signalGroup = orig })

	tk := toolkit.New(nil)
	ws := t.TempDir()
	if err := Register(tk, Config{Workspace: ws, Tools: []Tool{{Name: ExecuteShellCommand, Group: toolkit.BasicGroup}}}); err != nil {
		t.Fatal(err)
	}
	call := func(in map[string]any) *toolkit.Response {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return tk.Invoke(ctx, toolkit.ToolCall{ID: "c", Name: ExecuteShellCommand, Input: in})
	}
	// Ends by itself, leaving a process in its group.
	if r := call(map[string]any{"command": "sleep 60 & echo ok"}); !strings.Contains(r.Text(), "ok") {
		t.Fatalf("%s: %s", r.State, r.Text())
	}
	// Ends by itself, leaving a process that left the session holding
	// the output pipe; the timeout passes while it is read (on a loaded
	// machine it may pass before: the groups are then signalled while
	// the command runs, which the check below holds to the same rule).
	call(map[string]any{"timeout": 3, "command": `setsid sh -c 'echo $$ > pid.tmp; mv pid.tmp pid; exec sleep 60' &
		while [ ! -s pid ]; do sleep 0.01; done; cat pid`})
	var pid int
	natstest.WaitFor(t, "the session leader's pid", func() bool {
		b, err := os.ReadFile(ws + "/pid")
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	_ = syscall.Kill(pid, syscall.SIGKILL)
	mu.Lock()
	defer mu.Unlock()
	if signals == 0 {
		t.Fatal("no group was signalled")
	}
	if len(stray) > 0 {
		t.Errorf("%d of %d group signals were sent after the group's leader was reaped: %v", len(stray), signals, stray)
	}
}
