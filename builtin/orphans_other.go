//go:build unix && !linux

package builtin

import "syscall"

// commandAttr runs a command in a session of its own.
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// reapOrphans does nothing where the worker cannot tell a command's
// orphans from its other children (no /proc).
func reapOrphans() {}

// killSession does nothing where a session's processes cannot be found
// (no /proc): the command's process group is still killed.
func killSession(int) {}

// waitExited reports false: there is no waiting for a process to end
// that leaves it unreaped, so the group is killed after the leader was
// reaped, as a pid wrap could turn against another group.
func waitExited(int) bool { return false }
