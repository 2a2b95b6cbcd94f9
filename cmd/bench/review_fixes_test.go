package main

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

func summaryLine(lines []string, prefix string) string {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// The inflight verdict said "met" although 862 of 6000 calls were never
// in flight (overloaded), and the bytes were divided by all 6000.
func TestInflightVerdictNeedsEveryCall(t *testing.T) {
	rep := &report{Scenarios: []scenarioReport{{Name: "inflight", Points: []point{{
		Scenario: "inflight", System: sysToolbus, Workers: 1, Conc: 6000, Calls: 6000, OK: 5138,
		Errors:              map[string]int64{"overloaded": 862},
		WorkerBytesInFlight: 6.4 * 1024, BenchBytesInFlight: 13.6 * 1024,
	}}}}}
	l := summaryLine(summarize(rep), "inflight:")
	if strings.Contains(l, " met") {
		t.Errorf("verdict met with 862 of 6000 calls failed: %q", l)
	}
}

// A durable (or core+retry) call ending worker_lost under the fault is
// exactly the guarantee violation; the correctness line dropped it.
func TestFaultLostOnSafePathsIsAnError(t *testing.T) {
	rep := &report{Scenarios: []scenarioReport{{Name: "fault", Points: []point{
		{Scenario: "fault", System: "core", Conc: 8, Calls: 100, OK: 97, Errors: map[string]int64{string(toolkit.CodeWorkerLost): 3}},
		{Scenario: "fault", System: "core+retry", Conc: 8, Calls: 100, OK: 98, Errors: map[string]int64{string(toolkit.CodeWorkerLost): 2}},
		{Scenario: "fault", System: sysDurable, Conc: 8, Calls: 100, OK: 95, Errors: map[string]int64{string(toolkit.CodeWorkerLost): 5}},
	}}}}
	l := summaryLine(summarize(rep), "correctness:")
	if strings.HasPrefix(l, "correctness: 0 ") {
		t.Errorf("7 lost calls on the paths that must lose none, yet %q", l)
	}
}

// With the defaults (-d 1s, --fault-every 3s) the fault scenario killed no
// worker: the ticker first fired after the measurement was over.
func TestFaultDefaultsKillWorkers(t *testing.T) {
	cfg, err := parseFlags([]string{"--fault", "kill-worker", "--workers", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.calls == 0 && cfg.dur < cfg.faultEvery {
		t.Errorf("accepted: each series measures %v but the first kill comes after %v", cfg.dur, cfg.faultEvery)
	}
}

// A fault that stopped while its killed worker's replacement was starting
// (the round ended) gave the replacement up: the fleet kept the dead
// worker in its place, one short for the rest of the run, and a later
// kill could leave no worker at all (TestFault saw 214 calls unavailable
// on a loaded machine).
func TestKillOneReplacesWhenStopped(t *testing.T) {
	cfg, err := parseFlags([]string{"--workers", "2", "-s", "echo"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEnv(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	f := e.fleet.(*procFleet)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the faults stopped
	_ = f.killOne(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, p := range f.procs {
		select {
		case <-p.done:
			t.Errorf("worker %d of the fleet is the killed process, not a replacement", i)
		default:
		}
	}
}

// A ratio just under its bar read "0.70x raw-js … (goal: ≥ 0.7x) MISSED":
// rounded for the eye, compared unrounded.
func TestVerdictRatioNotRoundedOntoTheBar(t *testing.T) {
	rep := &report{Scenarios: []scenarioReport{{Name: "echo", Points: []point{
		{Scenario: "echo", System: sysDurable, Conc: 64, CallsPerSec: 19000, Ratios: map[string]ratio{sysRawJS: {Throughput: 0.697, P50: 1.3}}},
		{Scenario: "echo", System: sysToolbus, Conc: 64, CallsPerSec: 40000, Ratios: map[string]ratio{sysRaw: {Throughput: 0.8123, P50: 1}}},
	}}}}
	lines := summarize(rep)
	if l := summaryLine(lines, "durable echo c=64: 19.0k"); !strings.Contains(l, "0.697x raw-js") || !strings.HasSuffix(l, "MISSED") {
		t.Errorf("0.697 against a 0.7 bar: %q", l)
	}
	if l := summaryLine(lines, "echo c=64:"); !strings.Contains(l, "0.81x raw") || !strings.HasSuffix(l, " met") {
		t.Errorf("0.8123 against a 0.8 bar: %q", l)
	}
}

// A bench that could not start (no server at --nats) panicked closing
// the nil env it was about to return; it returns the error.
func TestStartFailureIsAnError(t *testing.T) {
	cfg, err := parseFlags([]string{"--nats", "nats://127.0.0.1:1", "-s", "echo"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEnv(context.Background(), cfg)
	if err == nil || e != nil {
		t.Fatalf("newEnv = %v, %v; want no env and an error", e, err)
	}
}

// A worker process that could not start said only "worker process
// exited before it was ready: EOF": not how it ended, nor why.
func TestWorkerStartFailureSaysWhy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	p, err := startWorkerProc(ctx, "nats://127.0.0.1:1", 1, time.Second, false, nil)
	if err == nil {
		p.stop()
		t.Fatal("a worker with no server to reach started")
	}
	for _, want := range []string{"ended before it was ready", "exit status 1", "bench worker: nats: no servers available"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// The fault scenario went on killing workers after its measuring time,
// while the calls in flight were finished: -d 2s with --fault-every 1s,
// which the flags' check counts as two faults, reported 3 and 6 workers
// killed, and each kill in that drain could lose or delay another call.
func TestFaultsOnlyWhileMeasuring(t *testing.T) {
	cfg, err := parseFlags([]string{"--fault", "kill-worker", "--workers", "2", "--fault-every", "200ms", "-d", "400ms", "-c", "1", "--warmup", "0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEnv(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	first := e.fleet.pids()
	// The one call outlasts the measuring time: it ends once a third
	// worker has replaced a killed one, or, when none does, at the guard.
	call := func(ctx context.Context, _, _ int) outcome {
		deadline := time.Now().Add(8 * time.Second) // guard, not a measurement
		var replacements []int
		for time.Now().Before(deadline) && ctx.Err() == nil && len(replacements) < 3 {
			for _, p := range e.fleet.pids() {
				if !slices.Contains(first, p) && !slices.Contains(replacements, p) {
					replacements = append(replacements, p)
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		return outcome{}
	}
	sc := &scenario{name: "fault"}
	rd := measureRound(context.Background(), e, sc, series{system: "core", call: call}, loadSpec{conc: 1, dur: cfg.dur}, "fault", nil)
	if rd.faults > 2 {
		t.Errorf("%d workers killed in a measuring time of %v with a fault every %v: the faults went on after it", rd.faults, cfg.dur, cfg.faultEvery)
	}
}

// With --audit the fault summary counted the auditor's findings (a seq
// gap, a duplicated final on the wire) as lost calls, though the calls
// they were found on may have ended well: "1 lost" for a series whose
// every call completed. They are listed apart from the lost calls.
func TestFaultSummaryKeepsAuditApart(t *testing.T) {
	rep := &report{Scenarios: []scenarioReport{{Name: "fault", Points: []point{
		{Scenario: "fault", System: "core+retry", Conc: 8, Calls: 100, OK: 100, Faults: 2,
			Errors: map[string]int64{errWireSeqGap: 1, errWireDupFinal: 2}},
		{Scenario: "fault", System: "core", Conc: 8, Calls: 100, OK: 97, Faults: 2,
			Errors: map[string]int64{string(toolkit.CodeWorkerLost): 3, errWireNoFinal: 1}},
	}}}}
	lines := summarize(rep)
	if l := summaryLine(lines, "fault core+retry "); !strings.Contains(l, "100 completed") || !strings.Contains(l, " 0 lost") ||
		!strings.Contains(l, "wire audit: wire_duplicate_final:2,wire_seq_gap:1") {
		t.Errorf("%q: want 0 lost and the audit's findings apart", l)
	}
	if l := summaryLine(lines, "fault core "); !strings.Contains(l, " 3 lost (worker_lost:3)") || !strings.Contains(l, "wire audit: wire_no_final:1") {
		t.Errorf("%q: want 3 lost (worker_lost:3) and the audit's finding apart", l)
	}
}
