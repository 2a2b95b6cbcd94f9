package ostest

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
)

var errWindows = errors.New("ostest: not available on windows")

// Mkfifo skips the test: Windows has no named pipes in the file system.
func Mkfifo(t testing.TB, path string, mode uint32) error {
	t.Helper()
	t.Skip("no named pipes in the file system on windows")
	return nil
}

// Kill fails: Windows has no signals to send.
func Kill(pid int, sig syscall.Signal) error { return errWindows }

// Stop and Cont are signals Windows cannot send (Process.Signal fails).
var (
	Stop os.Signal = syscall.Signal(0x13)
	Cont os.Signal = syscall.Signal(0x12)
)

// SetRecvBuffer sets the receive buffer of the socket fd to n bytes.
func SetRecvBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}

// ListenUnix listens on a Unix socket made at path.
func ListenUnix(t testing.TB, path string) (net.Listener, error) {
	t.Helper()
	return net.Listen("unix", path)
}
