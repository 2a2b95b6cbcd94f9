//go:build unix

package mcp

import "syscall"

// stdioUnsupported says why stdio servers cannot run here: "", they can.
const stdioUnsupported = ""

// killGroup sends SIGKILL to the process group pgid.
func killGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
