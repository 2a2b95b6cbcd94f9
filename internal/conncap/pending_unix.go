//go:build linux || darwin

package conncap

import (
	"net"
	"syscall"
)

// pending says whether bytes c's peer sent wait in the kernel, unread; it
// does not wait for them.
func pending(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var n int
	// Control, not Read: Read would wait for the server's own reader of
	// the connection, which may wait for the peer.
	rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, _ = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	})
	return n > 0
}
