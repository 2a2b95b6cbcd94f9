package main

import "syscall"

// terminate asks a worker process to drain and exit.
var terminate = syscall.SIGTERM

// childAttr makes a worker process die with the bench, however the bench
// ends.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
