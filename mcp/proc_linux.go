package mcp

import "syscall"

// serverProcAttr starts a stdio server in a process group of its own
// (ended whole: session.kill) that the kernel kills when the worker's
// process dies without closing it (SIGKILL, the OOM killer): nothing
// else would end a server that ignores stdin EOF. (Pdeathsig follows the
// thread that started the server; Go keeps its threads unless a goroutine
// locked to one exits, which the worker does not do.) A wrapper's own
// children are not reached that way.
func serverProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
