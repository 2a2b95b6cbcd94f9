package main

import "syscall"

// terminate asks a worker process to drain and exit.
var terminate = syscall.SIGTERM

// childAttr makes a worker process die with the bench, however the bench
// ends, and puts it in a process group of its own: a Ctrl-C at the
// terminal, sent to the bench's group, reaches the bench alone, which
// stops its workers itself (unreached, they ended on their own and
// raced the bench's interrupt with a worker lost).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
