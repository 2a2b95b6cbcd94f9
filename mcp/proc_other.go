//go:build unix && !linux

package mcp

import "syscall"

// serverProcAttr starts a stdio server in a process group of its own,
// ended whole (session.kill).
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
