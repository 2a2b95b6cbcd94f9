package builtin_test

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/internal/ostest"
)

// A worker that is the parent of last resort (PID 1 of a container, or a
// subreaper) receives what a command left running when it is killed;
// nothing reaped them, and each call that left a process behind left a
// zombie in the process table for as long as the worker ran. The kill of
// a command's group now reaps those of its members that came to the
// worker. The test runs itself again as a subreaper.
func TestShellLeftoversAreReaped(t *testing.T) {
	asSubreaper(t, func() {
		tk, _ := execKit(t, builtin.Config{})
		for name, cmd := range map[string]string{
			"child":      "sleep 100 & echo pid=$!",
			"grandchild": "sh -c 'sleep 100 & echo pid=$!'",
		} {
			t.Run(name, func(t *testing.T) {
				r := invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": cmd})
				pid := childPid(t, r.Text())
				stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
				if err == nil {
					s := string(stat)
					t.Errorf("process %d was left behind, not reaped: %s", pid, s[strings.LastIndexByte(s, ')')+2:][:1])
				}
			})
		}
	})
}

// A process a command started that left its group (setsid, as daemons
// do) is not killed with the group; where the worker is the parent of
// last resort it came to the worker when the command ended, and when it
// ended in turn it stayed a zombie for as long as the worker ran: one per
// such call. Each command's end now reaps those that have ended. The test
// runs itself again as a subreaper.
func TestShellEscapedOrphansAreReaped(t *testing.T) {
	asSubreaper(t, func() {
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			t.Skip("no /proc:", err)
		}
		tk, _ := execKit(t, builtin.Config{})
		const n = 5
		var pids []int
		for range n {
			// It has left the group once it has written its pid.
			r := invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": "rm -f p; setsid sh -c 'echo $$ > p; exec sleep 0.2' >/dev/null 2>&1 & " +
				"until [ -s p ]; do sleep 0.01; done; echo pid=$(cat p)"})
			pids = append(pids, childPid(t, r.Text()))
		}
		for _, pid := range pids {
			waitGone(t, pid) // ended: gone, or a zombie
		}
		invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{"command": "true"})
		for _, pid := range pids {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
				t.Errorf("process %d that left its command's group ended and was not reaped", pid)
			}
		}
	})
}

// asSubreaper runs body in the test binary run again as a subreaper (the
// worker's place as the parent of last resort, as PID 1 of a container
// is), and reports its result here; it skips where the process cannot
// become one.
func asSubreaper(t *testing.T, body func()) {
	if !ostest.InChild(t, "TOOLBUS_TEST_REAP_HELPER") {
		return
	}
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Skip("cannot become a subreaper:", errno)
	}
	body()
}
