package main

import (
	"bytes"
	"strings"
	"testing"
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
