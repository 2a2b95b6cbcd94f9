package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// workerChildren are the bench worker processes this process started
// and has not reaped, read from /proc.
func workerChildren(t *testing.T) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(self) {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == "worker" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// startBench runs benchMain in the background and returns once its
// header is written (its signals caught, its workers up); the channel
// gets its exit code.
func startBench(t *testing.T, stderr io.Writer, args ...string) <-chan int {
	t.Helper()
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- benchMain(args, pw, stderr)
		pw.Close()
	}()
	r := bufio.NewReader(pr)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "toolbus bench") {
		t.Fatalf("no header: %q %v", line, err)
	}
	go io.Copy(io.Discard, r)
	return code
}

// waitExit waits for the bench's exit code; bound only guards a hang.
func waitExit(t *testing.T, code <-chan int, bound time.Duration, what string) int {
	t.Helper()
	select {
	case c := <-code:
		return c
	case <-time.After(bound):
		t.Fatalf("the bench is still running %v after %s", bound, what)
		return 0
	}
}

// noWorkersLeft fails if a worker process of this process survived its
// run.
func noWorkersLeft(t *testing.T) {
	t.Helper()
	if left := workerChildren(t); len(left) > 0 {
		t.Errorf("worker processes %v outlived the run", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// The inflight scenario slept half the calls' --sleep before reading
// memory and heard no interrupt meanwhile: Ctrl-C took up to 30s, and
// the run then reported a point of calls cut short as a measurement.
func TestInterruptWhileInFlightWaits(t *testing.T) {
	sent := make(chan struct{})
	testInFlightSent = func() { close(sent) }
	t.Cleanup(func() { testInFlightSent = nil })
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var stderr bytes.Buffer
	code := startBench(t, &stderr, "-s", "inflight", "--workers", "2", "--inflight", "100", "--slots", "50", "--sleep", "60s", "--json", jsonPath)
	select {
	case <-sent:
	case c := <-code:
		t.Fatalf("exit %d before the calls were sent: %s", c, stderr.String())
	case <-time.After(guard):
		t.Fatal("the calls were not sent")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	// Unheard, the interrupt leaves the run waiting for the calls, each
	// sleeping 60 s from before the signal: an exit within 50 s was heard.
	if c := waitExit(t, code, 50*time.Second, "an interrupt while the calls were in flight"); c != 1 || !strings.Contains(stderr.String(), "bench: interrupted") {
		t.Errorf("exit %d, stderr %q: want 1 and the run said interrupted", c, stderr.String())
	}
	rep, b := readReport(t, jsonPath)
	if len(rep.Scenarios) != 0 || !strings.HasPrefix(rep.Error, "interrupted") {
		t.Errorf("the report holds a point measured after the interrupt, or does not say interrupted: %s", b)
	}
	noWorkersLeft(t)
}

// A worker process killed outside --fault (OOM-killed, killed by a user)
// went unnoticed: the run measured on with one worker short, or with
// none (every call unavailable), and reported the numbers as valid.
func TestWorkerDeathEndsRun(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var stderr bytes.Buffer
	code := startBench(t, &stderr, "-s", "echo,sleep", "--systems", "toolbus,raw", "--workers", "2", "-c", "2", "-d", "1m", "--rounds", "1",
		"--warmup", "0", "--sleep-workers", "2", "--json", jsonPath)
	kids := workerChildren(t)
	if len(kids) != 2 {
		t.Fatalf("worker processes %v, want 2", kids)
	}
	victim := kids[1]
	if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c := waitExit(t, code, guard, "a worker process was killed")
	msg := stderr.String()
	if c != 1 || !strings.Contains(msg, "worker process "+strconv.Itoa(victim)) || !strings.Contains(msg, "signal: killed") {
		t.Errorf("exit %d, stderr %q: want 1 and the killed worker named with how it ended", c, msg)
	}
	rep, b := readReport(t, jsonPath)
	if len(rep.Scenarios) != 0 || !strings.Contains(rep.Error, strconv.Itoa(victim)) {
		t.Errorf("the report holds points measured without the worker, or does not name it: %s", b)
	}
	noWorkersLeft(t)
}

// Interrupted while its worker processes started, the run said "the
// report holds the scenarios finished before" though it had none and
// wrote no report.
func TestInterruptAtStartUp(t *testing.T) {
	// Caught here too, an interrupt that comes early cannot end the test.
	caught := make(chan os.Signal, 1)
	signal.Notify(caught, syscall.SIGINT)
	defer signal.Stop(caught)
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- benchMain([]string{"-s", "echo", "--workers", "3", "-n", "100", "-c", "1", "--json", jsonPath}, &stdout, &stderr)
	}()
	for len(workerChildren(t)) == 0 {
		select {
		case c := <-code:
			t.Fatalf("exit %d before a worker process started: %s", c, stderr.String())
		case <-time.After(time.Millisecond):
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	c := waitExit(t, code, guard, "an interrupt at start-up")
	if msg := stderr.String(); c != 1 || !strings.Contains(msg, "bench: interrupted") || strings.Contains(msg, "the report holds") {
		t.Errorf("exit %d, stderr %q: want 1, interrupted, and no report promised", c, msg)
	}
	if stdout.Len() > 0 {
		if _, err := os.Stat(jsonPath); err != nil {
			t.Errorf("the run started (%q) but wrote no report: %v", stdout.String(), err)
		}
	}
	noWorkersLeft(t)
}

// Ctrl-C at a terminal signals the whole foreground process group: the
// worker processes, in the bench's group, got it too and ended on their
// own, and the bench, racing them, could report "a worker process ended
// before it was ready ... (signal: interrupt)" or a lost worker instead
// of its interrupt. The workers have a group of their own; the bench
// stops them (and Pdeathsig still ends them with it).
func TestWorkersOutsideTheTerminalsProcessGroup(t *testing.T) {
	var stderr bytes.Buffer
	code := startBench(t, &stderr, "-s", "echo", "--systems", "toolbus,raw", "--workers", "2", "-c", "1", "-d", "1m", "--warmup", "0")
	kids := workerChildren(t)
	if len(kids) != 2 {
		t.Fatalf("worker processes %v, want 2", kids)
	}
	own := syscall.Getpgrp()
	for _, pid := range kids {
		pgid, err := syscall.Getpgid(pid)
		if err != nil {
			t.Fatal(err)
		}
		if pgid == own {
			t.Errorf("worker process %d is in the bench's process group %d: a Ctrl-C reaches it too", pid, own)
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if c := waitExit(t, code, guard, "an interrupt"); c != 1 || !strings.Contains(stderr.String(), "bench: interrupted") {
		t.Errorf("exit %d, stderr %q: want 1 and the run said interrupted", c, stderr.String())
	}
	noWorkersLeft(t)
}
