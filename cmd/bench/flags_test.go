package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// An output file that could not be written was found out after the run,
// its measurements lost with it; and --json and --svg naming one file
// kept only the SVG.
func TestOutputFilesCheckedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "kept.json")
	if err := os.WriteFile(existing, []byte("earlier"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--json", filepath.Join(dir, "no", "r.json")}, "--json"},
		{[]string{"--svg", dir}, "--svg"},
		{[]string{"--json", existing, "--svg", filepath.Join(dir, "no", "r.svg")}, "--svg"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"-s", "echo", "--systems", "toolbus", "-c", "1", "-n", "1", "--warmup", "0"}, tt.args...)
		code := benchMain(args, &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%q: exit %d, stderr %q: want a failure naming %s", tt.args, code, stderr.String(), tt.want)
		}
		if stdout.Len() > 0 {
			t.Errorf("%q: ran before finding its output unwritable:\n%s", tt.args, stdout.String())
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "earlier" {
		t.Errorf("the check changed an existing file: %q", b)
	}
	if _, err := parseFlags([]string{"--json", "r.out", "--svg", "./r.out"}, io.Discard); err == nil || !strings.Contains(err.Error(), "same file") {
		t.Errorf("--json and --svg on one file: %v", err)
	}
	if wd, err := os.Getwd(); err == nil {
		if _, err := parseFlags([]string{"--json", "r.out", "--cpuprofile", filepath.Join(wd, "r.out")}, io.Discard); err == nil || !strings.Contains(err.Error(), "same file") {
			t.Errorf("a relative and an absolute path to one file: %v", err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the checks left files behind: %v", ents)
	}
}

// Flags that another made meaningless were accepted and ignored: -d or
// --rounds beside -n, -s beside --fault, --transport beside --nats,
// --sleep-workers for a fleet the bench does not start; -n under -c
// labelled a point with more callers than it ever had calls in flight; a
// zero or negative --ack-wait silently became the bus's default of 30s.
func TestContradictoryFlagsRefused(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-n", "100", "-d", "5s"}, "-n and -d"},
		{[]string{"-n", "100", "--rounds", "2", "-c", "1"}, "-n and --rounds"},
		{[]string{"-n", "10", "-c", "1,64"}, "fewer calls than -c 64"},
		// -c not given: the message says the 64 is its default.
		{[]string{"-n", "10"}, "fewer calls than -c 64 callers (the default -c 1,16,64)"},
		{[]string{"--fault", "kill-worker", "--workers", "2", "-s", "echo"}, "without -s"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--transport", "tcp"}, "cannot be used with --nats"},
		{[]string{"--workers", "2", "--transport", "inproc"}, "over TCP"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--sleep-workers", "1,2"}, "cannot resize"},
		{[]string{"--ack-wait", "0s"}, "--ack-wait must be positive"},
		{[]string{"--ack-wait", "-1s"}, "--ack-wait must be positive"},
	} {
		_, err := parseFlags(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want it to mention %q", tt.args, err, tt.want)
		}
	}
	for _, args := range [][]string{
		{"-n", "64", "-c", "1,64"},
		{"-n", "0", "-d", "2s"},
		{"--workers", "2", "--transport", "tcp"},
		{"--nats", "nats://127.0.0.1:4222", "--workers", "2", "--sleep-workers", "1,2"},
		{"--fault", "kill-worker", "--workers", "2"},
	} {
		if _, err := parseFlags(args, io.Discard); err != nil {
			t.Errorf("%q refused: %v", args, err)
		}
	}
}

// bench worker took a stray argument (a URL without --nats after the
// flags) and a zero --ack-wait without a word, and -h exited 2 as an
// error.
func TestWorkerModeArguments(t *testing.T) {
	down := "nats://127.0.0.1:1"
	for _, args := range [][]string{{"--nats", down, "nats://127.0.0.1:2"}, {"--nats", down, "--ack-wait", "0s"}} {
		var stderr bytes.Buffer
		if code := workerMain(args, io.Discard, &stderr); code != 2 {
			t.Errorf("worker %q: exit %d (%s), want 2", args, code, strings.TrimSpace(stderr.String()))
		}
	}
	if code := workerMain([]string{"-h"}, io.Discard, io.Discard); code != 0 {
		t.Errorf("worker -h: exit %d, want 0 as bench -h", code)
	}
}

// --procs with --nats measured "one worker process" on the external
// server, where the workers started there took the calls as well.
func TestProcsWithExternalServerRefused(t *testing.T) {
	_, err := parseFlags([]string{"--procs", "--nats", "nats://127.0.0.1:4222"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--procs") {
		t.Errorf("err = %v, want --procs with --nats refused", err)
	}
	if cfg, err := parseFlags([]string{"--nats", "nats://127.0.0.1:4222"}, io.Discard); err != nil || cfg.procPass {
		t.Errorf("--nats alone: %v, proc pass %v", err, cfg != nil && cfg.procPass)
	}
}

// -s all, as the package's first example runs it, was refused: all took
// inflight in, which needs worker processes and sleeps of 2s or more.
func TestAllScenarios(t *testing.T) {
	cfg, err := parseFlags([]string{"-s", "all", "-c", "1,16,64,256", "-d", "3s"}, io.Discard)
	if err != nil {
		t.Fatalf("-s all: %v", err)
	}
	if want := allScenarios[:len(allScenarios)-1]; !slices.Equal(cfg.scenarios, want) {
		t.Errorf("-s all: %v, want %v", cfg.scenarios, want)
	}
	cfg, err = parseFlags([]string{"-s", "all,inflight", "--workers", "3", "--sleep", "2s", "--slots", "4000"}, io.Discard)
	if err != nil {
		t.Fatalf("-s all,inflight: %v", err)
	}
	if !slices.Equal(cfg.scenarios, allScenarios) {
		t.Errorf("-s all,inflight: %v, want %v", cfg.scenarios, allScenarios)
	}
	// Spaced or twice, as the rest of the list may be.
	for _, s := range []string{"echo, all", "all,all", " all "} {
		cfg, err = parseFlags([]string{"-s", s, "-c", "1,16,64,256", "-d", "3s"}, io.Discard)
		if err != nil || len(cfg.scenarios) != len(allScenarios)-1 {
			t.Errorf("-s %q: %v, %v", s, cfg, err)
		}
	}
}

// An unwritable --cpuprofile said "bench: open /x/p: no such file or
// directory", not which flag named the file; --json and --svg say theirs.
func TestUnwritableOutputNamesItsFlag(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir", "out")
	for _, flag := range []string{"--json", "--svg", "--cpuprofile"} {
		var stderr bytes.Buffer
		code := benchMain([]string{"-s", "echo", "-n", "1", "-c", "1", flag, missing}, io.Discard, &stderr)
		if code != 1 || !strings.HasPrefix(stderr.String(), "bench: "+flag+": ") {
			t.Errorf("%s in a missing directory: exit %d, stderr %q; want 1 and the flag named", flag, code, stderr.String())
		}
	}
}

// --rate NaN ran the closed loop without a word (NaN is neither below 0
// nor above 0), and a rate too low for one call per measuring round
// still made one call at the start of each round: --rate 0.0001 reported
// about 4 calls/s, and below 1e-10 the interval between calls overflowed
// and the calls went as fast as in the closed loop.
func TestRateMustScheduleCalls(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "NaN"}, "--rate must be"},
		{[]string{"--rate", "1e-11", "-n", "64"}, "--rate must be"},
		{[]string{"--rate", "0.01", "-s", "echo"}, "fewer than one call"},
		{[]string{"--rate", "2", "-d", "1s", "-s", "echo"}, "fewer than one call"}, // 4 rounds of 250ms
	} {
		_, err := parseFlags(tt.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want it to mention %q", tt.args, err, tt.want)
		}
	}
	for _, args := range [][]string{
		{"--rate", "4", "-d", "1s", "-s", "echo"},
		{"--rate", "2", "-d", "1s", "--rounds", "1", "-s", "echo"},
		{"--rate", "0.5", "-n", "64", "-s", "echo"},
		{"--rate", "500", "-d", "100ms", "-s", "echo"},
	} {
		if _, err := parseFlags(args, io.Discard); err != nil {
			t.Errorf("%q refused: %v", args, err)
		}
	}
}

// --slots above a worker's MaxInFlight (4096) was taken: the sleep
// table's note read "each worker runs at most 100000 sleeps at once",
// while the worker answered overloaded past 4096 calls.
func TestSlotsWithinMaxInFlight(t *testing.T) {
	for _, v := range []string{"4097", "100000"} {
		_, err := parseFlags([]string{"--slots", v, "-s", "sleep"}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--slots must be 1 to 4096") {
			t.Errorf("--slots %s: err = %v, want it refused naming the 4096 calls a worker runs", v, err)
		}
		var stderr bytes.Buffer
		if code := workerMain([]string{"--nats", "nats://127.0.0.1:1", "--slots", v}, io.Discard, &stderr); code != 2 {
			t.Errorf("bench worker --slots %s: exit %d (%s), want 2", v, code, strings.TrimSpace(stderr.String()))
		}
	}
	if _, err := parseFlags([]string{"--slots", "4096", "-s", "sleep"}, io.Discard); err != nil {
		t.Errorf("--slots 4096: %v", err)
	}
}

// --max-payload 100 was accepted and the run failed at its start, on
// whatever first did not fit (the KV bucket's JetStream request, or a
// worker's announcement of the bench tools, 3.4 KB): a value under what
// the bench needs is a flag error naming the minimum. The minimum is
// enough: the scenarios that use JetStream and sessions run there.
func TestMaxPayloadMinimum(t *testing.T) {
	for _, v := range []string{"100", strconv.Itoa(minMaxPayload - 1)} {
		var stderr bytes.Buffer
		code := benchMain([]string{"--max-payload", v, "-s", "echo", "--systems", "toolbus", "-c", "1", "-n", "1"}, io.Discard, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "--max-payload") || !strings.Contains(stderr.String(), strconv.Itoa(minMaxPayload)) {
			t.Errorf("--max-payload %s: exit %d, stderr %q: want a flag error (2) naming the minimum %d", v, code, stderr.String(), minMaxPayload)
		}
	}
	rep := runBench(t, "--max-payload", strconv.Itoa(minMaxPayload), "-s", "echo,payload,groups,sessions",
		"--systems", "toolbus,raw,durable,raw-js", "--out", "10000", "-c", "1", "-n", "2", "--warmup", "0")
	for _, sr := range rep.Scenarios {
		for _, p := range sr.Points {
			if p.Calls == 0 || p.OK != p.Calls {
				t.Errorf("--max-payload %d: %s %s: %d of %d calls ended well (errors %v)", minMaxPayload, sr.Name, p.System, p.OK, p.Calls, p.Errors)
			}
		}
	}
}
