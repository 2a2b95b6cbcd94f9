package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
)

// A toolbus point whose calls all failed has no p50: its latency ratio
// to the baseline came out 0, and the latency bars read "met".
func TestAllFailedMissesLatencyBars(t *testing.T) {
	failed := point{System: sysToolbus, Calls: 100, Errors: map[string]int64{"unavailable": 100}}
	good := point{System: sysRaw, Calls: 100, OK: 100, CallsPerSec: 5000, Latency: latency{P50: 200, P99: 400}}
	echo := scenarioReport{Name: "echo", Baselines: []string{sysRaw, sysMCP}}
	proc := scenarioReport{Name: "echo" + procSuffix, Baselines: []string{sysRaw}}
	for _, c := range []int{1, 64} {
		f, g := failed, good
		f.Conc, g.Conc = c, c
		echo.Points = append(echo.Points, f, g)
		proc.Points = append(proc.Points, f, g)
	}
	sess := scenarioReport{Name: "sessions", Baselines: []string{sysQueue}, Points: []point{
		{System: sysQueue, Conc: 1, Calls: 10, OK: 10, CallsPerSec: 100, Latency: latency{P50: 200}},
		{System: sysPinned, Conc: 1, Calls: 10, OK: 0, Errors: map[string]int64{"unavailable": 10}},
	}}
	rep := &report{Scenarios: []scenarioReport{echo, proc, sess}}
	for i := range rep.Scenarios {
		computeRatios(&rep.Scenarios[i])
	}
	lines := summarize(rep)
	for _, prefix := range []string{"echo c=1:", "separate processes, echo c=1:", "sessions c=1:"} {
		l := summaryLine(lines, prefix)
		if l == "" {
			t.Errorf("no %q line in %q", prefix, lines)
			continue
		}
		if strings.HasSuffix(l, " met") {
			t.Errorf("no call ended well, yet %q", l)
		}
	}
	var out bytes.Buffer
	writeTable(&out, rep.Scenarios[0])
	if strings.Contains(out.String(), "p50 0.00x") {
		t.Errorf("the table gives a p50 ratio to a point without latency:\n%s", out.String())
	}
}

// A bench worker whose connection was closed for good (the server gone
// longer than its reconnect attempts) stayed up, serving nothing and
// saying nothing, until someone killed it.
func TestWorkerEndsWhenConnectionClosed(t *testing.T) {
	srv := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t) })
	testConnOptions = []nats.Option{nats.NoReconnect()}
	t.Cleanup(func() { testConnOptions = nil })
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- workerMain([]string{"--nats", srv.ClientURL(), "--slots", "1"}, pw, &stderr)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("worker said %q (%v), not ready; stderr: %s", line, err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	srv.Shutdown()
	select {
	case c := <-code:
		if c != 1 || !strings.Contains(stderr.String(), "lost the NATS server") {
			t.Errorf("exit %d, stderr %q: want 1 and the lost server named", c, stderr.String())
		}
	case <-time.After(guard): // a guard against a hang, not a measurement
		t.Fatal("the worker is still up a long while after its connection closed")
	}
}

// A run against an external server that went away for good went on: the
// calls failed at once on the closed connection, as fast as the callers
// could make them, to the end of every point, and the run ended well.
func TestRunEndsWhenServerLost(t *testing.T) {
	srv := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t) })
	h, err := startHost(natstest.Ctx(t), natstest.Conn(t, srv), hostOptions{slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // its server is gone: no drain to wait for
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		h.stop(ctx)
	})
	testConnOptions = []nats.Option{nats.NoReconnect()}
	t.Cleanup(func() { testConnOptions = nil })
	cfg, err := parseFlags([]string{"--nats", srv.ClientURL(), "-s", "echo", "--systems", "toolbus,raw", "-c", "2", "-d", "20s", "--warmup", "0", "--rounds", "1",
		"--stall", "1s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	pr, pw := io.Pipe()
	type result struct {
		rep *report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := run(ctx, cfg, pw, nil)
		pw.Close()
		done <- result{rep, err}
	}()
	r := bufio.NewReader(pr)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "toolbus bench") {
		t.Fatalf("no header: %q %v", line, err)
	}
	go io.Copy(io.Discard, r)
	srv.Shutdown()
	res := <-done
	if res.err == nil || !strings.Contains(res.err.Error(), "lost the NATS server") {
		t.Errorf("run ended with %v, want the lost server named", res.err)
	}
}

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

// With --nats and no bench worker started there, the run measured every
// call ending unavailable, at once, and ended well.
func TestExternalServerWithoutWorkers(t *testing.T) {
	srv := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t) })
	cfg, err := parseFlags([]string{"--nats", srv.ClientURL(), "-s", "echo", "--systems", "toolbus", "-c", "1", "-n", "5", "--warmup", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = run(natstest.Ctx(t), cfg, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "bench worker --nats") {
		t.Errorf("run ended with %v, want it to say a bench worker must be started", err)
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
}

// With --nats and workers started separately, the bench process holds
// neither the server nor the workers, yet its CPU was shown with the
// asterisk of "the whole bench process, server and callers included".
func TestExternalFleetCPUIsTheCallers(t *testing.T) {
	srv := natstest.ServerWith(t, func(o *server.Options) { o.DontListen, o.Host, o.Port = false, "127.0.0.1", natstest.FreePort(t) })
	h, err := startHost(natstest.Ctx(t), natstest.Conn(t, srv), hostOptions{slots: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.stop(context.Background()) })
	rep := runBench(t, "--nats", srv.ClientURL(), "-s", "echo", "--systems", "toolbus,raw", "-c", "1", "-n", "20", "--warmup", "0")
	var out bytes.Buffer
	for _, sr := range rep.Scenarios {
		writeTable(&out, sr)
		for _, p := range sr.Points {
			if p.CPUScope == "process" {
				t.Errorf("%s %s: cpu scope %q, as if the server and the workers ran in the bench process", sr.Name, p.System, p.CPUScope)
			}
		}
	}
	if strings.Contains(out.String(), "*") {
		t.Errorf("the table marks cpu with the asterisk of the whole system in one process:\n%s", out.String())
	}
}

// A run whose points measured no call at all (-d too short to start one)
// summed up as "correctness: 0 calls failed a check" and nothing else.
func TestNoCallMeasuredIsSaid(t *testing.T) {
	rep := &report{Scenarios: []scenarioReport{{Name: "echo", Baselines: []string{sysRaw}, Points: []point{
		{System: sysToolbus, Conc: 1, Seconds: 1e-6},
		{System: sysRaw, Conc: 1, Seconds: 1e-6},
	}}}}
	computeRatios(&rep.Scenarios[0])
	l := summaryLine(summarize(rep), "no call measured")
	if !strings.Contains(l, "echo toolbus c=1") || !strings.Contains(l, "echo raw c=1") {
		t.Errorf("the summary does not say which points measured no call: %q", summarize(rep))
	}
}
