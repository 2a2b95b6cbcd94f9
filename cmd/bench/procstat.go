package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// procUsage is the CPU time and resident memory of a set of processes,
// read from /proc (Linux). ok is false where /proc is not available.
type procUsage struct {
	cpu    time.Duration
	rss    int64 // bytes
	writes int64 // write system calls (syscw of /proc/<pid>/io); 0 when unreadable
	ok     bool
}

// clockTick is USER_HZ, 100 on every Linux the bench runs on.
const clockTick = 100

// usageOf sums the usage of pids; no pids means this process.
func usageOf(pids []int) procUsage {
	if len(pids) == 0 {
		return readUsage("self")
	}
	var u procUsage
	u.ok = true
	for _, p := range pids {
		pu := readUsage(strconv.Itoa(p))
		u.cpu += pu.cpu
		u.rss += pu.rss
		u.writes += pu.writes
		u.ok = u.ok && pu.ok
	}
	return u
}

func readUsage(pid string) procUsage {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procUsage{}
	}
	// The command name may contain spaces; fields start after its ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return procUsage{}
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return procUsage{}
	}
	// After ')': state(0) ... utime(11) stime(12).
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return procUsage{}
	}
	u := procUsage{cpu: time.Duration(ut+st) * time.Second / clockTick, ok: true}
	if io, err := os.ReadFile("/proc/" + pid + "/io"); err == nil {
		for line := range strings.SplitSeq(string(io), "\n") {
			if rest, ok := strings.CutPrefix(line, "syscw:"); ok {
				u.writes, _ = strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			}
		}
	}
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return u
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			u.rss = kb << 10
		}
	}
	return u
}
