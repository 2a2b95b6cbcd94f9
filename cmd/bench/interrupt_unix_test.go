//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An interrupted run (Ctrl-C) said "bench: context canceled", and its
// --json report read as a finished run of fewer scenarios.
func TestInterruptedRunSaysSo(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- benchMain([]string{"-s", "echo,stream", "--systems", "toolbus", "-c", "1", "-d", "1m", "--warmup", "0", "--json", jsonPath}, pw, &stderr)
		pw.Close()
	}()
	r := bufio.NewReader(pr)
	// The header is written once the run is under way, its signals caught.
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "toolbus bench") {
		t.Fatalf("no header: %q %v", line, err)
	}
	go io.Copy(io.Discard, r)
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if c := <-code; c != 1 || !strings.Contains(stderr.String(), "bench: interrupted") {
		t.Errorf("exit %d, stderr %q: want 1 and the run said interrupted", c, stderr.String())
	}
	rep, b := readReport(t, jsonPath)
	if !strings.HasPrefix(rep.Error, "interrupted") {
		t.Errorf("the JSON report does not say the run was interrupted: %s", b)
	}
}

// An interrupt did not reach the calls in flight: they ran on to their
// end (a sleep of --sleep 60s, a call to a worker that stalls until
// --stall), and Ctrl-C waited for them.
func TestInterruptReachesCallsInFlight(t *testing.T) {
	started := make(chan struct{}, 2)
	call := func(ctx context.Context, _, _ int) outcome {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			return outcome{code: "interrupted"}
		case <-time.After(guard): // the hang this test is about
			return outcome{code: "not_interrupted"}
		}
	}
	for _, spec := range []loadSpec{{conc: 2, dur: time.Hour}, {conc: 2, warmup: time.Hour, dur: time.Hour}} {
		res := make(chan loadResult, 1)
		ctx, cancel := context.WithCancel(context.Background())
		go func() { res <- runLoad(ctx, spec, call, nil, nil) }()
		<-started
		<-started
		cancel()
		if r := <-res; r.errors["not_interrupted"] > 0 {
			t.Errorf("warm-up %v: calls in flight ran on after the interrupt: %v", spec.warmup, r.errors)
		}
	}
}
