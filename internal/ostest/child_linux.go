package ostest

import "syscall"

// childAttr ends a child with the test process that runs it (a test
// timed out, go test killed): left running, a child looping on what it
// tests burns a core for as long as it runs.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
