package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/toolbus/toolbus/toolkit"
)

// human formats a rate: 0.40, 812, 12.3k, 1.25M.
func human(v float64) string {
	switch {
	case v > 0 && v < 9.995:
		return fmt.Sprintf("%.2f", v)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 9995:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// us formats microseconds: 42µs, 1.25ms, 2.1s.
func us(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v >= 1e6:
		return fmt.Sprintf("%.2fs", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fms", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.2fms", v/1e3)
	}
	return fmt.Sprintf("%.0fµs", v)
}

func errorsText(errs map[string]int64) string {
	if len(errs) == 0 {
		return "0"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(errs)) {
		parts = append(parts, fmt.Sprintf("%s:%d", k, errs[k]))
	}
	return strings.Join(parts, ",")
}

// writeTable prints one scenario: a row per series and concurrency.
func writeTable(out io.Writer, sr scenarioReport) {
	fmt.Fprintf(out, "\n%s", sr.Name)
	if sr.Note != "" {
		fmt.Fprintf(out, "  (%s)", sr.Note)
	}
	fmt.Fprintln(out)
	extra := slices.ContainsFunc(sr.Points, func(p point) bool { return p.Extra != nil })
	cross := sr.Name == "groups"
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"system", "c", "calls/s"}
	if sr.Units != "" {
		head = append(head, sr.Units+"/s")
	}
	head = append(head, "p50", "p90", "p99", "p99.9")
	if extra {
		head = append(head, "extra p50", "extra p99")
	}
	if cross {
		head = append(head, "cross")
	}
	head = append(head, "errors", "cpu", "cpu/call", "writes/call", "rss")
	for _, b := range sr.Baselines {
		head = append(head, "vs "+b)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, p := range sr.Points {
		row := []string{p.System, fmt.Sprint(p.Conc), human(p.CallsPerSec)}
		if sr.Units != "" {
			row = append(row, human(p.UnitsPerSec))
		}
		row = append(row, us(p.Latency.P50), us(p.Latency.P90), us(p.Latency.P99), us(p.Latency.P999))
		if extra {
			if p.Extra != nil {
				row = append(row, us(p.Extra.P50), us(p.Extra.P99))
			} else {
				row = append(row, "-", "-")
			}
		}
		if cross {
			row = append(row, fmt.Sprintf("%d/%d", p.Cross, p.OK))
		}
		row = append(row, errorsText(p.Errors), cpuText(p), cpuPerCallText(p), writesText(p), rssText(p.RSSBytes))
		for _, b := range sr.Baselines {
			r, ok := p.Ratios[b]
			if !ok {
				row = append(row, "")
				continue
			}
			if r.P50 == 0 { // no call of p ended well: no latency to compare
				row = append(row, fmt.Sprintf("%.2fx (p50 -)", r.Throughput))
				continue
			}
			row = append(row, fmt.Sprintf("%.2fx (p50 %.2fx)", r.Throughput, r.P50))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}

func cpuText(p point) string {
	if p.CPUScope == "" {
		return "-"
	}
	s := fmt.Sprintf("%.2f", p.CPUCores)
	switch p.CPUScope {
	case "process":
		s += "*"
	case "callers":
		s += "†"
	}
	return s
}

func cpuPerCallText(p point) string {
	if p.CPUScope == "" || p.OK == 0 {
		return "-"
	}
	return us(p.CPUPerCall)
}

func writesText(p point) string {
	if p.WritesPerCall == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", p.WritesPerCall)
}

func rssText(b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%dM", b>>20)
}

// summarize checks the bars of DESIGN.md §5 against this run.
func summarize(rep *report) []string {
	var lines []string
	find := func(scenario string) *scenarioReport {
		for i := range rep.Scenarios {
			if rep.Scenarios[i].Name == scenario {
				return &rep.Scenarios[i]
			}
		}
		return nil
	}
	// at picks the point of a system at c, or at the largest c ≤ 64 when
	// c is 0.
	at := func(sr *scenarioReport, system string, c int) *point {
		var best *point
		for i := range sr.Points {
			p := &sr.Points[i]
			if p.System != system {
				continue
			}
			if c > 0 && p.Conc == c {
				return p
			}
			if c == 0 && p.Conc <= 64 && (best == nil || p.Conc > best.Conc) {
				best = p
			}
		}
		return best
	}
	// near prints a ratio set against bar: with two decimals, or as many
	// more as it takes not to print the bar itself (0.697 is not "0.70x
	// … MISSED", nor 1.3004 "1.300x … MISSED").
	near := func(ratio, bar float64) string {
		if ratio == bar {
			return fmt.Sprintf("%.2f", ratio)
		}
		for d := 2; d <= 6; d++ {
			if t := strconv.FormatFloat(ratio, 'f', d, 64); t != strconv.FormatFloat(bar, 'f', d, 64) {
				return t
			}
		}
		return strconv.FormatFloat(ratio, 'f', -1, 64)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	// paced judges a throughput bar of p: not at all in open loop, where
	// every system is offered the same --rate, and calls/s follow it up
	// to what each system keeps up with (both at the rate read 1.00x).
	// The bars are the closed loop's; the latency bars are judged either
	// way.
	paced := func(p *point, ok bool) string {
		if p.Rate > 0 {
			return fmt.Sprintf("not judged (open loop: every system offered --rate %s calls/s)", strconv.FormatFloat(p.Rate, 'f', -1, 64))
		}
		return verdict(ok)
	}
	// unchecked says a scenario's bars found no point at their
	// concurrency (-c without 1 or any c up to 64).
	unchecked := func(sr *scenarioReport, where string) {
		lines = append(lines, fmt.Sprintf("%s: bars not checked: they are at %s, this run measured c=%s", sr.Name, where, joinInts(slices.Compact(slices.Sorted(slices.Values(pointConcs(sr)))))))
	}
	// failed says a bar (or goal) of what at c was not checked against
	// baseline b, which measured calls there and none ended well: no
	// ratio was computed, and a bar left out without a word reads as a
	// run that did not measure it.
	failed := func(sr *scenarioReport, what string, c int, b, kind string) {
		if q := at(sr, b, c); q != nil && q.Calls > 0 && q.OK == 0 {
			lines = append(lines, fmt.Sprintf("%s c=%d: %s not checked: %s had no call that ended well (%s)", what, c, kind, b, errorsText(q.Errors)))
		}
	}
	if sr := find("echo"); sr != nil && at(sr, sysToolbus, 1) == nil && at(sr, sysToolbus, 0) == nil {
		unchecked(sr, "c=1 and c=64 (or the largest c up to 64)")
	}
	if sr := find("echo"); sr != nil {
		if p := at(sr, sysToolbus, 1); p != nil {
			if r, ok := p.Ratios[sysRaw]; ok {
				p50 := fmt.Sprintf("p50 %s = %sx raw", us(p.Latency.P50), near(r.P50, 1.3))
				if r.P50 == 0 {
					p50 = "no call ended well"
				}
				lines = append(lines, fmt.Sprintf("echo c=1: %s calls/s = %.2fx raw, %s (bar: p50 ≤ 1.3x) %s",
					human(p.CallsPerSec), r.Throughput, p50, verdict(r.P50 > 0 && r.P50 <= 1.3)))
			} else {
				failed(sr, "echo", 1, sysRaw, "bar")
			}
		}
		if p := at(sr, sysToolbus, 0); p != nil && p.Conc > 1 {
			if r, ok := p.Ratios[sysRaw]; ok {
				lines = append(lines, fmt.Sprintf("echo c=%d: %s calls/s = %sx raw (bar: ≥ 0.8x) %s",
					p.Conc, human(p.CallsPerSec), near(r.Throughput, 0.8), paced(p, r.Throughput >= 0.8)))
			} else {
				failed(sr, "echo", p.Conc, sysRaw, "bar")
			}
			if r, ok := p.Ratios[sysMCP]; ok {
				lines = append(lines, fmt.Sprintf("echo c=%d: %sx mcp-http calls/s (bar: ≥ 3x) %s",
					p.Conc, near(r.Throughput, 3), paced(p, r.Throughput >= 3)))
			} else {
				failed(sr, "echo", p.Conc, sysMCP, "bar")
			}
			// On worker processes (--workers), their CPU per call has
			// its bar, as in the separate-process pass.
			if q := at(sr, sysRaw, p.Conc); q != nil && p.CPUScope == "workers" && q.CPUScope == "workers" && p.CPUPerCall > 0 && q.CPUPerCall > 0 {
				lines = append(lines, fmt.Sprintf("echo c=%d: worker CPU %s per call = %sx raw's %s (bar: ≤ 2x) %s; write syscalls per call %.3f vs %.3f",
					p.Conc, us(p.CPUPerCall), near(p.CPUPerCall/q.CPUPerCall, 2), us(q.CPUPerCall), verdict(p.CPUPerCall <= 2*q.CPUPerCall), p.WritesPerCall, q.WritesPerCall))
			}
		}
	}
	if sr := find("echo"); sr != nil {
		if p := at(sr, sysDurable, 0); p != nil {
			if r, ok := p.Ratios[sysRawJS]; ok {
				p50 := fmt.Sprintf("p50 %s = %.2fx raw-js", us(p.Latency.P50), r.P50)
				if r.P50 == 0 {
					p50 = "no call ended well"
				}
				lines = append(lines, fmt.Sprintf("durable echo c=%d: %s calls/s = %sx raw-js, %s (goal: ≥ 0.7x calls/s) %s",
					p.Conc, human(p.CallsPerSec), near(r.Throughput, 0.7), p50, paced(p, r.Throughput >= 0.7)))
			} else {
				failed(sr, "durable echo", p.Conc, sysRawJS, "goal")
			}
			if q := at(sr, sysToolbus, p.Conc); q != nil && q.CallsPerSec > 0 {
				lines = append(lines, fmt.Sprintf("durable echo c=%d: %.2fx the core path's calls/s, p50 %s vs %s", p.Conc,
					p.CallsPerSec/q.CallsPerSec, us(p.Latency.P50), us(q.Latency.P50)))
			}
		}
	}
	if sr := find("echo" + procSuffix); sr != nil {
		if p, q := at(sr, sysToolbus, 64), at(sr, sysRaw, 64); p != nil && q != nil && q.CallsPerSec > 0 {
			lines = append(lines, fmt.Sprintf("separate processes, echo c=64: %s calls/s = %sx raw (bar: ≥ 0.8x) %s",
				human(p.CallsPerSec), near(p.CallsPerSec/q.CallsPerSec, 0.8), paced(p, p.CallsPerSec >= 0.8*q.CallsPerSec)))
			if p.CPUPerCall > 0 && q.CPUPerCall > 0 {
				lines = append(lines, fmt.Sprintf("separate processes, echo c=64: worker CPU %s per call = %sx raw's %s (bar: ≤ 2x) %s; write syscalls per call %.3f vs %.3f",
					us(p.CPUPerCall), near(p.CPUPerCall/q.CPUPerCall, 2), us(q.CPUPerCall), verdict(p.CPUPerCall <= 2*q.CPUPerCall), p.WritesPerCall, q.WritesPerCall))
			}
		} else if p != nil {
			failed(sr, "separate processes, echo", 64, sysRaw, "bar")
		}
		if p, q := at(sr, sysToolbus, 1), at(sr, sysRaw, 1); p != nil && q != nil && q.Latency.P50 > 0 {
			lines = append(lines, fmt.Sprintf("separate processes, echo c=1: p50 %s = %sx raw (bar: ≤ 1.3x) %s",
				us(p.Latency.P50), near(p.Latency.P50/q.Latency.P50, 1.3), verdict(p.OK > 0 && p.Latency.P50 <= 1.3*q.Latency.P50)))
		} else if p != nil {
			failed(sr, "separate processes, echo", 1, sysRaw, "bar")
		}
	}
	if sr := find("stream" + procSuffix); sr != nil {
		if p, q := at(sr, sysToolbus, 64), at(sr, sysRaw, 64); p != nil && q != nil && q.UnitsPerSec > 0 {
			line := fmt.Sprintf("separate processes, stream c=64: %s chunks/s = %sx raw (bar: ≥ 0.8x) %s",
				human(p.UnitsPerSec), near(p.UnitsPerSec/q.UnitsPerSec, 0.8), paced(p, p.UnitsPerSec >= 0.8*q.UnitsPerSec))
			if p.CPUPerCall > 0 && q.CPUPerCall > 0 {
				line += fmt.Sprintf("; worker CPU per call %.2fx raw's", p.CPUPerCall/q.CPUPerCall)
			}
			lines = append(lines, line)
		} else if p != nil {
			failed(sr, "separate processes, stream", 64, sysRaw, "bar")
		}
	}
	if sr := find("inflight"); sr != nil {
		for _, p := range sr.Points {
			lines = append(lines, fmt.Sprintf("inflight: %d sleep calls at once on %d worker processes: %.1f KB per in-flight call on the workers (goal: < 10 KB) %s, %.1f KB in the bench process (client and embedded server); %d of %d ended well",
				p.Conc, p.Workers, p.WorkerBytesInFlight/1024, verdict(p.WorkerBytesInFlight > 0 && p.WorkerBytesInFlight < 10<<10 && p.OK == p.Calls), p.BenchBytesInFlight/1024, p.OK, p.Calls))
		}
	}
	if sr := find("sessions"); sr != nil {
		for _, p := range sr.Points {
			if p.System != sysPinned {
				continue
			}
			if r, ok := p.Ratios[sysQueue]; !ok {
				failed(sr, "sessions", p.Conc, sysQueue, "goal")
			} else {
				goal := "calls/s ≥ 0.9x, p50 ≤ 1.2x"
				if p.Rate > 0 { // open loop: the p50 alone
					goal = "p50 ≤ 1.2x; calls/s not judged in open loop"
				}
				lines = append(lines, fmt.Sprintf("sessions c=%d: pinned %s calls/s = %sx the queue group's, p50 %s = %sx (goal: %s) %s",
					p.Conc, human(p.CallsPerSec), near(r.Throughput, 0.9), us(p.Latency.P50), near(r.P50, 1.2), goal, verdict((r.Throughput >= 0.9 || p.Rate > 0) && r.P50 > 0 && r.P50 <= 1.2)))
			}
		}
	}
	if sr := find("fault"); sr != nil {
		for _, p := range sr.Points {
			// The auditor's findings (--audit) are about frames on the
			// wire, not calls lost: the call they were found on may have
			// ended well. They are listed apart.
			lost, failed, wire := int64(0), map[string]int64{}, map[string]int64{}
			for code, n := range p.Errors {
				if isAuditCode(code) {
					wire[code] += n
					continue
				}
				failed[code] += n
				lost += n
			}
			line := fmt.Sprintf("fault %s c=%d: %d calls, %d completed (%d of them sent or delivered again), %d lost (%s), %d workers killed",
				p.System, p.Conc, p.Calls, p.OK, p.Again, lost, errorsText(failed), p.Faults)
			if len(wire) > 0 {
				line += "; wire audit: " + errorsText(wire)
			}
			lines = append(lines, line)
		}
	}
	if sr := find("stream"); sr != nil && at(sr, sysToolbus, 0) == nil {
		unchecked(sr, "c=64 (or the largest c up to 64)")
	}
	if sr := find("stream"); sr != nil {
		if p := at(sr, sysToolbus, 0); p != nil {
			if r, ok := p.Ratios[sysRaw]; ok {
				lines = append(lines, fmt.Sprintf("stream c=%d: %s chunks/s = %sx raw publish (bar: ≥ 0.8x) %s",
					p.Conc, human(p.UnitsPerSec), near(r.Throughput, 0.8), paced(p, r.Throughput >= 0.8)))
			} else {
				failed(sr, "stream", p.Conc, sysRaw, "bar")
			}
		}
	}
	if sr := find("sleep"); sr != nil && len(sr.Baselines) == 1 {
		for _, p := range sr.Points {
			if r, ok := p.Ratios[sr.Baselines[0]]; ok && p.Conc == slices.Max(pointConcs(sr)) {
				lines = append(lines, fmt.Sprintf("sleep c=%d: %s → %s: %.2fx calls/s (%s → %s)", p.Conc, sr.Baselines[0], p.System,
					r.Throughput, human(at(sr, sr.Baselines[0], p.Conc).CallsPerSec), human(p.CallsPerSec)))
			}
		}
	}
	if sr := find("cancel"); sr != nil && at(sr, sysToolbus, 64) == nil {
		unchecked(sr, "c=64")
	}
	if sr := find("cancel"); sr != nil {
		for _, p := range sr.Points {
			if p.System != sysToolbus || p.Extra == nil {
				continue
			}
			line := fmt.Sprintf("cancel c=%d: to ctx.Done p50 %s p99 %s", p.Conc, us(p.Extra.P50), us(p.Extra.P99))
			if p.Conc == 64 {
				line += " (bar: p99 < 2ms) " + verdict(p.OK > 0 && p.Extra.P99 > 0 && p.Extra.P99 < 2000)
			}
			line += fmt.Sprintf("; to interrupted final p50 %s p99 %s", us(p.Latency.P50), us(p.Latency.P99))
			if q := at(sr, sysRaw, p.Conc); q != nil && q.Extra != nil {
				line += fmt.Sprintf("; raw: to the waiting goroutine p50 %s p99 %s, to the answer p50 %s p99 %s",
					us(q.Extra.P50), us(q.Extra.P99), us(q.Latency.P50), us(q.Latency.P99))
			}
			lines = append(lines, line)
		}
	}
	// A point that measured no call (a -d too short to start one) has
	// nothing to check: said, not counted as passing.
	var none []string
	for _, sr := range rep.Scenarios {
		for _, p := range sr.Points {
			if p.Calls == 0 {
				none = append(none, fmt.Sprintf("%s %s c=%d", sr.Name, p.System, p.Conc))
			}
		}
	}
	if len(none) > 0 {
		lines = append(lines, fmt.Sprintf("no call measured, nothing checked: %s", strings.Join(none, ", ")))
	}
	var errs int64
	for _, sr := range rep.Scenarios {
		for _, p := range sr.Points {
			for code, n := range p.Errors {
				if sr.Name == "fault" && p.System == "core" && code == string(toolkit.CodeWorkerLost) {
					continue // the core path's expected report (counted above); the others lose none
				}
				errs += n
			}
		}
	}
	checked := "wrong, lost or duplicated finals, error codes"
	if rep.Settings["audit"] != "on" {
		checked = "wrong or lost finals, error codes; duplicated finals only with --audit"
	} else if slices.ContainsFunc(rep.Scenarios, func(sr scenarioReport) bool { return strings.HasSuffix(sr.Name, procSuffix) }) {
		checked += "; duplicated finals not in the separate-process pass, which runs without --audit"
	}
	lines = append(lines, fmt.Sprintf("correctness: %d calls failed a check (%s)", errs, checked))
	return lines
}

func pointConcs(sr *scenarioReport) []int {
	var cs []int
	for _, p := range sr.Points {
		cs = append(cs, p.Conc)
	}
	return cs
}

// writeJSON writes rep; its lists are lists even when empty (a run cut
// short before a scenario or its summary), never null.
func writeJSON(path string, rep *report) error {
	r := *rep
	r.Scenarios = append([]scenarioReport{}, rep.Scenarios...)
	for i := range r.Scenarios {
		if r.Scenarios[i].Points == nil {
			r.Scenarios[i].Points = []point{}
		}
	}
	if r.Summary == nil {
		r.Summary = []string{}
	}
	b, err := json.MarshalIndent(&r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
