package builtin_test

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/toolbus/toolbus/builtin"
	"github.com/toolbus/toolbus/internal/ostest"
)

// A command has no input, so no terminal either: a worker started from a
// terminal handed it to its commands as their controlling terminal, and
// a command that prompts there (ssh, sudo, git asking for a password)
// reached the operator's terminal, or, being in a background process
// group, was stopped on reading until its timeout. The test runs itself
// again with a terminal of its own to see what a command gets.
func TestShellHasNoTerminal(t *testing.T) {
	if os.Getenv("TOOLBUS_TEST_TTY_HELPER") == "1" {
		tty, err := os.Open("/dev/tty")
		if err != nil {
			t.Fatalf("the helper has no terminal to withhold: %v", err)
		}
		tty.Close()
		tk, _ := execKit(t, builtin.Config{})
		r := invoke(t, tk, builtin.ExecuteShellCommand, map[string]any{
			"command": `if (exec 3</dev/tty) 2>/dev/null; then echo terminal; else echo no terminal; fi`})
		if got := wantOK(t, r); got != "no terminal\n<returncode>0</returncode>" {
			t.Errorf("the command could open the worker's terminal: %q", got)
		}
		return
	}
	master, slave := ostest.OpenPTY(t)
	defer master.Close()
	defer slave.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestShellHasNoTerminal$", "-test.v")
	cmd.Env = append(os.Environ(), "TOOLBUS_TEST_TTY_HELPER=1")
	cmd.Stdin = slave
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Run(); err != nil {
		t.Errorf("the helper failed (%v):\n%s", err, out.String())
	}
}
