package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/toolbus/toolbus/internal/natstest"
)

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

// toolctlOnTerminal runs toolctl with its stdout a terminal and returns
// what the terminal got (its line discipline's "\r\n" read back as
// "\n") and stderr.
func toolctlOnTerminal(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	master, slave := openPTY(t)
	defer master.Close()
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(master) // until the slave is closed (EIO)
		read <- string(b)
	}()
	var errb strings.Builder
	code = run(natstest.Ctx(t), args, strings.NewReader(""), slave, &errb)
	slave.Close()
	return code, strings.ReplaceAll(<-read, "\r\n", "\n"), errb.String()
}
