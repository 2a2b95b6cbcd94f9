package builtin_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/toolbus/toolbus/builtin"
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
	master, slave := openPTY(t)
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

// openPTY opens a new pseudo-terminal pair.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no pseudo-terminals:", err)
	}
	ioctl := func(req uintptr, arg unsafe.Pointer) error {
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), req, uintptr(arg)); errno != 0 {
			return errno
		}
		return nil
	}
	var unlock int32
	var n uint32
	if err := ioctl(syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		master.Close()
		t.Skip("cannot unlock the pseudo-terminal:", err)
	}
	if err := ioctl(syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		master.Close()
		t.Skip("cannot name the pseudo-terminal:", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Skip("cannot open the pseudo-terminal:", err)
	}
	return master, slave
}
