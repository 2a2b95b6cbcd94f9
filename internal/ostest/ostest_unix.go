//go:build unix

package ostest

import (
	"os"
	"syscall"
	"testing"
)

// Mkfifo makes a named pipe at path.
func Mkfifo(t testing.TB, path string, mode uint32) error {
	t.Helper()
	return syscall.Mkfifo(path, mode)
}

// Kill sends sig to the process pid (to the process group -pid when
// negative).
func Kill(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// Stop and Cont stop a process and let it go on.
var (
	Stop os.Signal = syscall.SIGSTOP
	Cont os.Signal = syscall.SIGCONT
)

// SetRecvBuffer sets the receive buffer of the socket fd to n bytes.
func SetRecvBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
