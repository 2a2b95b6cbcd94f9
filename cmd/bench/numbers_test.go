package main

import (
	"context"
	"io"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The separate-process pass runs at 64 callers whatever -c says: -n 10
// -c 1,4 (no -s, so the pass is on) was taken, and its c=64 points, of
// 10 calls each, never had 64 in flight.
func TestFewCallsRefusedForTheProcPass(t *testing.T) {
	_, err := parseFlags([]string{"-n", "10", "-c", "1,4"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--procs") {
		t.Errorf("-n 10 -c 1,4 with the separate-process pass: err = %v, want it refused naming --procs", err)
	}
	for _, args := range [][]string{{"-n", "10", "-c", "1,4", "--procs=false"}, {"-n", "64", "-c", "1,4"}, {"-n", "10", "-c", "1,4", "-s", "echo"}} {
		if _, err := parseFlags(args, io.Discard); err != nil {
			t.Errorf("%q refused: %v", args, err)
		}
	}
}

// The auditor heard the warm-up's calls too, and settled them with the
// measured ones: a toolbus call of the warm-up without a final on the
// wire was counted as wire_no_final in the point, whose calls never
// include the warm-up's.
func TestAuditLeavesTheWarmUpOut(t *testing.T) {
	a := startHandReplies(t).a
	e := &env{cfg: &config{}, fleet: &localFleet{}, audit: a}
	// The first call of the warm-up and the first measured call each
	// stand for a call whose final never came on the wire.
	s0 := series{system: sysToolbus, call: func(_ context.Context, g, i int) outcome {
		if g == 0 && i == 0 {
			a.expect(callID())
		}
		time.Sleep(time.Millisecond)
		return outcome{}
	}}
	spec := loadSpec{conc: 1, calls: 5, warmup: 100 * time.Millisecond}
	rd := measureRound(context.Background(), e, &scenario{name: "echo"}, s0, spec, "", nil)
	if want := map[string]int64{errWireNoFinal: 1}; !maps.Equal(rd.audit, want) {
		t.Errorf("the round's audit %v, want %v: the warm-up's calls are not the point's", rd.audit, want)
	}
}

// The separate-process pass runs without the auditor, yet with --audit
// the correctness line said duplicated finals were checked, as if of
// every call.
func TestCorrectnessLineSaysTheProcPassIsNotAudited(t *testing.T) {
	pt := point{System: sysToolbus, Conc: 1, Calls: 10, OK: 10, CallsPerSec: 100, Latency: latency{P50: 100}}
	rep := &report{Settings: map[string]string{"audit": "on"}, Scenarios: []scenarioReport{
		{Name: "echo", Points: []point{pt}},
		{Name: "echo" + procSuffix, Points: []point{pt}},
	}}
	l := summaryLine(summarize(rep), "correctness:")
	if !strings.Contains(l, "separate-process") {
		t.Errorf("%q: the separate-process pass's calls were not audited", l)
	}
	rep.Scenarios = rep.Scenarios[:1]
	if l := summaryLine(summarize(rep), "correctness:"); strings.Contains(l, "separate-process") {
		t.Errorf("%q: no separate-process pass ran", l)
	}
}

// CPU is read in 10 ms ticks: over a short point the raw worker's CPU per
// call can read 0, and the stream line divided by 1e-9 instead, saying
// the toolbus worker used some 300000000000x raw's CPU per call.
func TestStreamProcCPURatioNeedsBoth(t *testing.T) {
	sr := scenarioReport{Name: "stream" + procSuffix, Units: "chunks", Baselines: []string{sysRaw}, Points: []point{
		{System: sysToolbus, Conc: 64, Calls: 100, OK: 100, CallsPerSec: 100, UnitsPerSec: 10000, Latency: latency{P50: 100}, CPUPerCall: 300, CPUScope: "workers"},
		{System: sysRaw, Conc: 64, Calls: 100, OK: 100, CallsPerSec: 100, UnitsPerSec: 10000, Latency: latency{P50: 100}, CPUScope: "workers"},
	}}
	l := summaryLine(summarize(&report{Scenarios: []scenarioReport{sr}}), "separate processes, stream c=64:")
	if l == "" || strings.Contains(l, "CPU per call") {
		t.Errorf("%q: raw's CPU per call read 0, there is no ratio to give", l)
	}
}

// A call of the inflight scenario that failed at once (overloaded,
// unavailable) was counted twice among the errors: under its code, and
// as ended_before_measured, having ended before memory was read; the
// correctness line summed both.
func TestInFlightFailedCallCountedOnce(t *testing.T) {
	e := &env{cfg: &config{inflight: 3, sleep: 100 * time.Millisecond}, fleet: &localFleet{}}
	var n atomic.Int64
	s0 := series{system: sysToolbus, held: func(ctx context.Context, seen func()) outcome {
		if n.Add(1) == 1 {
			return outcome{code: "overloaded"}
		}
		seen()
		select { // well after memory is read, once both were seen started
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		return outcome{}
	}}
	p, err := measureInFlight(context.Background(), e, s0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"overloaded": 1}; !maps.Equal(p.Errors, want) {
		t.Errorf("errors %v, want %v: one call failed", p.Errors, want)
	}
}

// A --chunk-size over the server's max_payload cannot be published raw:
// the raw replier's publish failed and each raw call waited out --stall
// and counted as lost_chunks, errors of the baseline's making. As with
// payload, the raw baseline is left out with a note.
func TestStreamChunkOverMaxPayloadHasNoRawBaseline(t *testing.T) {
	cfg, err := parseFlags([]string{"-s", "stream", "--max-payload", "65536", "--chunk-size", "70000", "--chunks", "2",
		"--systems", "toolbus,raw", "-c", "1", "-n", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	e, err := newEnv(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.close()
	sc, err := buildScenario(ctx, e, "stream")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sc.series {
		if s.close != nil {
			defer s.close()
		}
	}
	if got := systemsOf(scenarioReport{Points: pointsOf(sc)}); len(got) != 1 || got[0] != sysToolbus || !strings.Contains(sc.note, "max_payload") {
		t.Errorf("series %v, note %q: want toolbus alone and a note naming max_payload", got, sc.note)
	}
}

func pointsOf(sc *scenario) []point {
	var ps []point
	for _, s := range sc.series {
		ps = append(ps, point{System: s.label()})
	}
	return ps
}

// The inflight point reads memory, not CPU, yet it said its CPU scope was
// the workers: the table's cpu column read "0.00" cores for workers
// running every call, a number never measured (the JSON had no
// cpu_cores).
func TestInFlightClaimsNoCPU(t *testing.T) {
	e := &env{cfg: &config{inflight: 2, sleep: 20 * time.Millisecond}, fleet: &localFleet{}}
	s0 := series{system: sysToolbus, held: func(_ context.Context, seen func()) outcome {
		seen()
		time.Sleep(50 * time.Millisecond)
		return outcome{}
	}}
	p, err := measureInFlight(context.Background(), e, s0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.CPUCores == 0 && cpuText(p) != "-" {
		t.Errorf("cpu column %q for a point whose CPU was not measured", cpuText(p))
	}
}

// A point of -n calls is measured in one go, for as long as its calls
// take, yet the JSON's settings said each point measured -d (1s, the
// default) in --rounds (4) rounds.
func TestSettingsOfCallsPerPoint(t *testing.T) {
	cfg, err := parseFlags([]string{"-n", "100", "-c", "1"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.settings()
	if s["calls"] != "100" || s["duration"] != "" || s["rounds"] != "" {
		t.Errorf("settings %v: -n 100 measures neither -d nor --rounds", s)
	}
}

// A call the client already reports failed without a final on the wire
// (unavailable: no worker for the tool; worker_lost: the stall timeout)
// was counted twice with --audit: under its code, and again as
// wire_no_final, so the correctness line counted each such call twice.
func TestAuditDoesNotCountAFailedCallAgain(t *testing.T) {
	e := auditedEnv(t, &config{})
	// No worker serves echo here: every call ends unavailable at once.
	s0 := series{system: sysToolbus, call: busCall(e, "echo", func(int) map[string]any { return map[string]any{"text": "x"} }, "x")}
	var tl tally
	tl.add(measureRound(context.Background(), e, &scenario{name: "echo"}, s0, loadSpec{conc: 1, calls: 3}, "", nil))
	p := tl.point(&scenario{name: "echo"}, s0, 1, 0)
	var sum int64
	for _, n := range p.Errors {
		sum += n
	}
	if sum != p.Calls-p.OK {
		t.Errorf("errors %v for %d failed calls: a call counted more than once", p.Errors, p.Calls-p.OK)
	}
}

// Calls of a long sleep come at under one per second: 0.4 calls/s was
// printed "0", as if no call had ended well, and 2.4 calls/s "2".
func TestHumanSmallRates(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.4: "0.40", 2.4: "2.40", 48: "48", 812: "812", 12345: "12.3k"} {
		if got := human(v); got != want {
			t.Errorf("human(%v) = %q, want %q", v, got, want)
		}
	}
}

// The JSON's settings left out --systems and --sleep-workers: a report
// could not say which baselines were asked for, nor which fleet sizes
// the sleep scenario compared.
func TestSettingsNameSystemsAndSleepWorkers(t *testing.T) {
	cfg, err := parseFlags([]string{"--systems", "raw-js,toolbus,raw", "--sleep-workers", "2,1,4"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.settings()
	if s["systems"] != "toolbus,raw,raw-js" || s["sleep_workers"] != "2,1,4" {
		t.Errorf("settings %v: want systems toolbus,raw,raw-js (in the order of --systems' list) and sleep_workers 2,1,4", s)
	}
}
