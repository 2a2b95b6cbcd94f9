package builtin

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// commandAttr runs a command in a session of its own, killed when the
// worker dies: a worker killed outright (SIGKILL, OOM) runs no kill of
// its own, and its command would go on changing the workspace after its
// caller was told worker_lost, while the session's next calls run on
// another worker. (The signal comes when the thread that started the
// command ends; Go ends a thread only under a goroutine that locked it.)
func commandAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// reapOrphans waits for the worker's children that ended as zombies in a
// session other than the worker's and are not a running command's
// leader: where the worker is the parent of last resort (PID 1 of a
// container, or a subreaper), these are what the commands started that
// left their group (setsid; daemons do) and ended later, out of reach of
// the group's kill. Nothing else waits for them. Children the worker
// started itself in its own session (MCP stdio servers) are left to their
// owners. leaders.mu is held, so no command starts meanwhile.
func reapOrphans() {
	if !inheritsOrphans() || !childEnded() {
		return
	}
	me := strconv.Itoa(os.Getpid())
	self, ok := procStat("self")
	if !ok {
		return
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, ok := procStat(e.Name())
		if !ok || f[0] != "Z" || f[1] != me || f[3] == self[3] || leaders.m[pid] {
			continue
		}
		_, _ = syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
	}
}

// killSession sends SIGKILL to every process of session sid (a command's
// own, sid its leader's pid) that is still running: what the command
// started and moved to a process group of its own (setpgid: a shell's
// job control, Python's process_group) is out of reach of the group's
// kill but still in the session; only setsid leaves it. A process may
// fork while it is looked for, so the search repeats until it finds
// none (or a few times: what a fork bomb keeps making, the timeout and
// the next command's end catch).
//
// A /proc of another PID namespace (the host's, mounted in a container)
// would name other processes by these numbers: there nothing is killed.
func killSession(sid int) {
	if self, err := os.Readlink("/proc/self"); err != nil || self != strconv.Itoa(os.Getpid()) {
		return
	}
	want := strconv.Itoa(sid)
	for range 5 {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		found := false
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			f, ok := procStat(e.Name())
			if !ok || f[3] != want || f[0] == "Z" || f[0] == "X" {
				continue
			}
			found = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if !found {
			return
		}
	}
}

// childEnded reports whether a child of the worker has ended and waits to
// be reaped (it is left so): most commands' ends find none, and do not
// read /proc.
func childEnded() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return err == nil && info.Signo != 0
}

// inheritsOrphans reports whether the orphans of the worker's
// descendants become its children.
func inheritsOrphans() bool {
	const prGetChildSubreaper = 37
	var v int32
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetChildSubreaper, uintptr(unsafe.Pointer(&v)), 0)
	return os.Getpid() == 1 || (errno == 0 && v != 0)
}

// procStat returns the fields of /proc/<pid>/stat after the command
// name: state, ppid, pgrp, session, ...
func procStat(pid string) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return nil, false
	}
	f := strings.Fields(s[i+2:])
	return f, len(f) >= 4
}

// waitExited waits for the child pid to end and leaves it unreaped (a
// zombie, whose pid names no other process, nor its group or session,
// until cmd.Wait reaps it). It reports false if it could not wait.
func waitExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		return err == nil
	}
}
