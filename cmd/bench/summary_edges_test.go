package main

import (
	"strings"
	"testing"
)

// A baseline whose calls all failed (its replier broken, say) has no
// latency or throughput to compare with: no ratio is computed, and the
// bars against it were left out of the summary without a word, as if
// the run had not measured them. Each says it was not checked, and why.
func TestBarAgainstAFailedBaselineSaid(t *testing.T) {
	good := func(system string, c int) point {
		return point{System: system, Conc: c, Calls: 100, OK: 100, CallsPerSec: 1000, UnitsPerSec: 100000, Latency: latency{P50: 100}}
	}
	failed := func(system string, c int) point {
		return point{System: system, Conc: c, Calls: 100, Errors: map[string]int64{errNATS: 100}}
	}
	var scs []scenarioReport
	for _, name := range []string{"echo", "echo" + procSuffix, "stream", "stream" + procSuffix} {
		sr := scenarioReport{Name: name, Baselines: []string{sysRaw}}
		for _, c := range []int{1, 64} {
			sr.Points = append(sr.Points, good(sysToolbus, c), failed(sysRaw, c))
		}
		scs = append(scs, sr)
	}
	scs[0].Baselines = append(scs[0].Baselines, sysMCP, sysRawJS)
	scs[0].Points = append(scs[0].Points, failed(sysMCP, 64), good(sysDurable, 64), failed(sysRawJS, 64))
	scs = append(scs, scenarioReport{Name: "sessions", Baselines: []string{sysQueue}, Points: []point{failed(sysQueue, 1), good(sysPinned, 1)}})
	for i := range scs {
		computeRatios(&scs[i])
	}
	lines := summarize(&report{Scenarios: scs})
	for _, want := range []string{
		"echo c=1: bar not checked: raw had no call that ended well",
		"echo c=64: bar not checked: raw had no call that ended well",
		"echo c=64: bar not checked: mcp-http had no call that ended well",
		"durable echo c=64: goal not checked: raw-js had no call that ended well",
		"separate processes, echo c=1: bar not checked: raw had no call that ended well",
		"separate processes, echo c=64: bar not checked: raw had no call that ended well",
		"stream c=64: bar not checked: raw had no call that ended well",
		"separate processes, stream c=64: bar not checked: raw had no call that ended well",
		"sessions c=1: goal not checked: queue had no call that ended well",
	} {
		if summaryLine(lines, want) == "" {
			t.Errorf("no %q in the summary:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}

// A ratio within half a thousandth of its bar, on the wrong side of it,
// was printed with three decimals onto the bar itself: "p50 … = 1.300x
// raw (bar: p50 ≤ 1.3x) MISSED". It is printed with the decimals that
// tell it from the bar.
func TestVerdictRatioNeverPrintedAsTheBar(t *testing.T) {
	rep := &report{Scenarios: []scenarioReport{{Name: "echo", Points: []point{
		{Scenario: "echo", System: sysToolbus, Conc: 1, Calls: 100, OK: 100, CallsPerSec: 1000, Latency: latency{P50: 130.04}, Ratios: map[string]ratio{sysRaw: {Throughput: 0.5, P50: 1.3004}}},
		{Scenario: "echo", System: sysToolbus, Conc: 64, Calls: 100, OK: 100, CallsPerSec: 1000, Latency: latency{P50: 100}, Ratios: map[string]ratio{sysRaw: {Throughput: 0.79996, P50: 1}}},
	}}}}
	lines := summarize(rep)
	for _, tt := range []struct{ prefix, bar, want string }{
		{"echo c=1:", "1.300x", "1.3004x raw"},
		{"echo c=64:", "0.800x", "0.79996x raw"},
	} {
		l := summaryLine(lines, tt.prefix)
		if !strings.HasSuffix(l, "MISSED") || strings.Contains(l, tt.bar) || !strings.Contains(l, tt.want) {
			t.Errorf("want %q, MISSED, and not %q: %q", tt.want, tt.bar, l)
		}
	}
}

// A run whose -c left out 64 printed the cancel latencies without their
// bar (ctx.Done p99 < 2ms at c=64) and without saying it was not
// checked, as echo and stream say of theirs.
func TestCancelBarWithoutC64Said(t *testing.T) {
	at := func(system string) point {
		return point{System: system, Conc: 16, Calls: 100, OK: 100, CallsPerSec: 1000,
			Latency: latency{P50: 500, P99: 900}, Extra: &latency{P50: 100, P99: 300}}
	}
	sr := scenarioReport{Name: "cancel", Baselines: []string{sysRaw}, Points: []point{at(sysToolbus), at(sysRaw)}}
	computeRatios(&sr)
	lines := summarize(&report{Scenarios: []scenarioReport{sr}})
	if l := summaryLine(lines, "cancel:"); !strings.Contains(l, "not checked") || !strings.Contains(l, "c=16") {
		t.Errorf("the cancel bar, not checked, is not said so: %q", lines)
	}
}
