//go:build unix

package ostest

import (
	"net"
	"os"
	"path/filepath"
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

// ListenUnix listens on a Unix socket made at path. A socket's path has
// room for about 100 bytes (107 on Linux, 103 on macOS), which one in
// t.TempDir() under a long TMPDIR passes: its bind fails "invalid
// argument". Such a socket is bound through a symbolic link to path's
// directory, made in a directory of its own in /tmp that goes when t
// ends, so it is still made at path.
func ListenUnix(t testing.TB, path string) (net.Listener, error) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err == nil || len(path) < 100 {
		return l, err
	}
	dir, derr := os.MkdirTemp("/tmp", "sock")
	if derr != nil {
		return nil, err
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	link := filepath.Join(dir, "d")
	if os.Symlink(filepath.Dir(path), link) != nil {
		return nil, err
	}
	return net.Listen("unix", filepath.Join(link, filepath.Base(path)))
}
