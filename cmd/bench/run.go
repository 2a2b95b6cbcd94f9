package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolbus/toolbus/internal/gcfloor"
)

// point is one measurement: a series of a scenario at one concurrency.
type point struct {
	Scenario    string           `json:"scenario"`
	System      string           `json:"system"`
	Workers     int              `json:"workers,omitempty"`
	Conc        int              `json:"concurrency"`
	Rate        float64          `json:"rate,omitempty"`
	Calls       int64            `json:"calls"`
	OK          int64            `json:"ok"`
	Seconds     float64          `json:"seconds"`
	CallsPerSec float64          `json:"calls_per_sec"`
	Units       string           `json:"units,omitempty"`
	UnitsPerSec float64          `json:"units_per_sec,omitempty"`
	Latency     latency          `json:"latency_us"`
	Extra       *latency         `json:"extra_latency_us,omitempty"`
	Errors      map[string]int64 `json:"errors,omitempty"`
	Cross       int64            `json:"cross_worker,omitempty"`
	Again       int64            `json:"sent_again,omitempty"`
	Faults      int64            `json:"faults,omitempty"`
	CPUCores    float64          `json:"cpu_cores,omitempty"`
	CPUPerCall  float64          `json:"cpu_us_per_call,omitempty"`
	// WritesPerCall is the worker processes' write system calls per call
	// (separate processes only).
	WritesPerCall float64 `json:"writes_per_call,omitempty"`
	// WorkerBytesInFlight and BenchBytesInFlight are the inflight
	// scenario's memory per in-flight call: the worker processes' RSS, and
	// the bench process's, while the calls run, over before.
	WorkerBytesInFlight float64          `json:"worker_bytes_per_inflight_call,omitempty"`
	BenchBytesInFlight  float64          `json:"bench_bytes_per_inflight_call,omitempty"`
	CPUScope            string           `json:"cpu_scope,omitempty"`
	RSSBytes            int64            `json:"rss_bytes,omitempty"`
	Ratios              map[string]ratio `json:"ratios,omitempty"`
}

// latency percentiles in microseconds.
type latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// ratio of a point to the baseline's point at the same concurrency:
// throughput (higher is better) and p50 latency (lower is better).
type ratio struct {
	Throughput float64 `json:"throughput"`
	P50        float64 `json:"p50"`
}

func latencyOf(sorted []time.Duration) latency {
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	if len(sorted) == 0 {
		return latency{}
	}
	return latency{P50: us(percentile(sorted, 0.5)), P90: us(percentile(sorted, 0.9)), P99: us(percentile(sorted, 0.99)),
		P999: us(percentile(sorted, 0.999)), Max: us(sorted[len(sorted)-1])}
}

// report is everything a run measured; --json writes it as is.
type report struct {
	Date      string            `json:"date"`
	Machine   machine           `json:"machine"`
	Topology  string            `json:"topology"`
	Settings  map[string]string `json:"settings"`
	Scenarios []scenarioReport  `json:"scenarios"`
	Summary   []string          `json:"summary"`
}

type machine struct {
	CPUs    int    `json:"cpus"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	Go      string `json:"go"`
	LoadAvg string `json:"loadavg,omitempty"`
	Model   string `json:"cpu_model,omitempty"`
	MemGiB  int64  `json:"mem_gib,omitempty"`
}

type scenarioReport struct {
	Name      string   `json:"name"`
	Units     string   `json:"units,omitempty"`
	Baselines []string `json:"baselines,omitempty"`
	Note      string   `json:"note,omitempty"`
	Points    []point  `json:"points"`
}

// run measures every configured scenario and writes each scenario's table
// to out as soon as it is done.
func run(ctx context.Context, cfg *config, out io.Writer, progress io.Writer) (*report, error) {
	e, err := newEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	rep := &report{
		Date:     time.Now().UTC().Format(time.RFC3339),
		Machine:  thisMachine(),
		Topology: e.topology(),
		Settings: cfg.settings(),
	}
	fmt.Fprintf(out, "toolbus bench — %s, %d CPUs, %s\n", rep.Date, rep.Machine.CPUs, rep.Topology)
	// In process, this process hosts the server and the workers as the
	// worker binary does, and keeps its GC floor (GOGC or GOMEMLIMIT in
	// the environment turn it off); a process that only calls does not.
	stopFloor := func() {}
	if cfg.workers == 0 && cfg.natsURL == "" {
		stopFloor = gcfloor.Start(gcfloor.Default)
	}
	defer stopFloor()
	for _, name := range cfg.scenarios {
		sc, err := buildScenario(ctx, e, name)
		if err != nil {
			return rep, err
		}
		sr, err := measure(ctx, e, sc, progress)
		for _, s := range sc.series {
			if s.close != nil {
				s.close()
			}
		}
		if err != nil {
			return rep, err
		}
		rep.Scenarios = append(rep.Scenarios, sr)
		writeTable(out, sr)
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
	if cfg.procPass && ctx.Err() == nil {
		stopFloor()
		if err := runProcPass(ctx, cfg, rep, out, progress); err != nil {
			return rep, err
		}
	}
	rep.Summary = summarize(rep)
	if len(rep.Summary) > 0 {
		fmt.Fprintln(out, "\nsummary")
		for _, s := range rep.Summary {
			fmt.Fprintln(out, "  "+s)
		}
	}
	return rep, nil
}

func (e *env) topology() string {
	switch {
	case e.cfg.natsURL != "" && e.cfg.workers > 0:
		return fmt.Sprintf("external server %s, %d worker processes started by the bench", e.cfg.natsURL, e.cfg.workers)
	case e.cfg.natsURL != "":
		return fmt.Sprintf("external server %s, workers started separately", e.cfg.natsURL)
	case e.cfg.workers > 0:
		return fmt.Sprintf("embedded server on %s, worker processes on loopback TCP", e.url)
	case e.url != "":
		return "one process, embedded server over loopback TCP"
	}
	return "one process, embedded server in-process (no sockets)"
}

// measure runs a scenario's series, grouped by fleet size so the fleet is
// resized as seldom as possible, and the series of one group interleaved
// at each concurrency so they share the machine's noise.
func measure(ctx context.Context, e *env, sc *scenario, progress io.Writer) (scenarioReport, error) {
	sr := scenarioReport{Name: sc.name, Units: sc.unitName, Baselines: sc.baselines, Note: sc.note}
	var sizes []int
	for _, s := range sc.series {
		if !slices.Contains(sizes, s.workers) {
			sizes = append(sizes, s.workers)
		}
	}
	for _, n := range sizes {
		if n > 0 && n != e.fleet.size() {
			if err := e.fleet.resize(ctx, n); err != nil {
				return sr, err
			}
		}
		if sc.name == "inflight" {
			sr.Points = append(sr.Points, measureInFlight(ctx, e, sc.series[0], progress))
			continue
		}
		for _, c := range e.cfg.conc {
			for _, s := range sc.series {
				if s.workers != n {
					continue
				}
				sr.Points = append(sr.Points, measurePoint(ctx, e, sc, s, c, progress))
				if ctx.Err() != nil {
					return sr, ctx.Err()
				}
			}
		}
	}
	computeRatios(&sr)
	return sr, nil
}

func measurePoint(ctx context.Context, e *env, sc *scenario, s series, c int, progress io.Writer) point {
	spec := loadSpec{conc: c, dur: e.cfg.dur, calls: e.cfg.calls, warmup: e.cfg.warmup, rate: e.cfg.rate}
	var done atomic.Int64
	stopBar := startBar(progress, fmt.Sprintf("%-7s %-12s c=%-4d", sc.name, s.label(), c), spec, &done)
	pids := e.fleet.pids()
	var before procUsage
	var faults atomic.Int64
	stopFaults := func() {}
	res := runLoad(ctx, spec, s.call, &done, func() {
		before = usageOf(pids)
		if sc.name == "fault" {
			stopFaults = injectFaults(ctx, e, &faults)
		}
	})
	stopFaults()
	after := usageOf(pids)
	stopBar()

	p := point{
		Scenario: sc.name, System: s.label(), Workers: s.workers, Conc: c, Rate: e.cfg.rate,
		Calls: res.calls, OK: int64(len(res.lats)), Seconds: res.elapsed.Seconds(),
		Latency: latencyOf(res.lats), Errors: res.errors, Cross: res.cross, Units: sc.unitName,
		Again: res.again, Faults: faults.Load(),
	}
	if e.audit != nil {
		for k, n := range e.audit.settle() {
			p.Errors[k] += n
		}
	}
	if len(p.Errors) == 0 {
		p.Errors = nil
	}
	if res.elapsed > 0 {
		p.CallsPerSec = float64(p.OK) / res.elapsed.Seconds()
		if sc.unitName != "" {
			p.UnitsPerSec = float64(res.units) / res.elapsed.Seconds()
		}
	}
	if len(res.extras) > 0 {
		x := latencyOf(res.extras)
		p.Extra = &x
	}
	if before.ok && after.ok {
		p.CPUCores = (after.cpu - before.cpu).Seconds() / res.elapsed.Seconds()
		if p.OK > 0 {
			p.CPUPerCall = float64(after.cpu-before.cpu) / float64(time.Microsecond) / float64(p.OK)
		}
		p.RSSBytes = after.rss
		if len(pids) > 0 && p.OK > 0 {
			p.WritesPerCall = float64(after.writes-before.writes) / float64(p.OK)
		}
		p.CPUScope = "workers"
		if len(pids) == 0 {
			p.CPUScope = "process"
		}
	}
	return p
}

// injectFaults kills and replaces a worker process every --fault-every
// until the returned function is called, counting the kills.
func injectFaults(ctx context.Context, e *env, faults *atomic.Int64) (stop func()) {
	f, ok := e.fleet.(*procFleet)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(e.cfg.faultEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := f.killOne(ctx); err != nil && ctx.Err() == nil {
				fmt.Fprintln(os.Stderr, "bench: replacing a killed worker:", err)
				return
			}
			faults.Add(1)
		}
	}()
	return func() { cancel(); <-done }
}

func computeRatios(sr *scenarioReport) {
	for i := range sr.Points {
		p := &sr.Points[i]
		if slices.Contains(sr.Baselines, p.System) {
			continue
		}
		for _, b := range sr.Baselines {
			for _, q := range sr.Points {
				if q.System != b || q.Conc != p.Conc || q.CallsPerSec == 0 || q.Latency.P50 == 0 {
					continue
				}
				if p.Ratios == nil {
					p.Ratios = map[string]ratio{}
				}
				p.Ratios[b] = ratio{Throughput: p.CallsPerSec / q.CallsPerSec, P50: p.Latency.P50 / q.Latency.P50}
			}
		}
	}
}

func thisMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH, Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				m.Model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			m.MemGiB = (kb + 1<<19) >> 20
		}
	}
	return m
}

// startBar draws a progress bar on progress (nil: none) until stop is
// called.
func startBar(progress io.Writer, label string, spec loadSpec, done *atomic.Int64) (stop func()) {
	if progress == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	total := spec.warmup + spec.dur
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				fmt.Fprintf(progress, "\r%*s\r", 100, "")
				return
			case <-t.C:
			}
			el := time.Since(start)
			frac := 0.0
			if spec.calls > 0 {
				frac = float64(done.Load()) / float64(spec.calls)
			} else if total > 0 {
				frac = float64(el) / float64(total)
			}
			frac = min(max(frac, 0), 1)
			const width = 24
			n := int(frac * width)
			rate := float64(done.Load()) / max(el-spec.warmup, time.Millisecond).Seconds()
			if el < spec.warmup {
				rate = 0
			}
			fmt.Fprintf(progress, "\r%s [%s%s] %5.1fs %10s calls/s", label,
				strings.Repeat("#", n), strings.Repeat(".", width-n), el.Seconds(), human(rate))
		}
	}()
	return func() { close(quit); <-finished }
}

// procSuffix names the scenarios of the separate-process pass.
const procSuffix = "-1proc"

// runProcPass measures echo and stream against one worker process over
// TCP, c=1 and 64, toolbus and raw: the topology every real fleet has,
// next to the in-process one. Its scenarios are named <scenario>-1proc.
func runProcPass(ctx context.Context, cfg *config, rep *report, out, progress io.Writer) error {
	pc := *cfg
	pc.workers, pc.procPass, pc.audit = 1, false, false
	pc.scenarios = []string{"echo", "stream"}
	pc.conc = []int{1, 64}
	pc.systems = map[string]bool{sysToolbus: true, sysRaw: true}
	e, err := newEnv(ctx, &pc)
	if err != nil {
		return err
	}
	defer e.close()
	fmt.Fprintf(out, "\nseparate processes: %s\n", e.topology())
	for _, name := range pc.scenarios {
		sc, err := buildScenario(ctx, e, name)
		if err != nil {
			return err
		}
		sc.name += procSuffix
		sr, err := measure(ctx, e, sc, progress)
		for _, s := range sc.series {
			if s.close != nil {
				s.close()
			}
		}
		if err != nil {
			return err
		}
		rep.Scenarios = append(rep.Scenarios, sr)
		writeTable(out, sr)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// measureInFlight starts --inflight calls at once, reads the memory of the
// worker processes and of this process while they all run (half their
// sleep after the last was sent), and waits for their finals.
func measureInFlight(ctx context.Context, e *env, s series, progress io.Writer) point {
	n := e.cfg.inflight
	pids := e.fleet.pids()
	runtime.GC()
	before, self := usageOf(pids), readUsage("self")
	var done atomic.Int64
	stopBar := startBar(progress, fmt.Sprintf("%-7s %-12s n=%-6d", "inflight", s.label(), n), loadSpec{conc: n, calls: n}, &done)
	outs := make([]outcome, n)
	lats := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			t := time.Now()
			outs[i] = s.call(ctx, i, 0)
			lats[i] = time.Since(t)
			done.Add(1)
		})
	}
	time.Sleep(e.cfg.sleep / 2)
	during, selfDuring := usageOf(pids), readUsage("self")
	ended := done.Load()
	wg.Wait()
	elapsed := time.Since(start)
	stopBar()
	p := point{Scenario: "inflight", System: s.label(), Workers: len(pids), Conc: n, Calls: int64(n), Seconds: elapsed.Seconds(), Errors: map[string]int64{}}
	var ok []time.Duration
	for i, o := range outs {
		if o.code != "" {
			p.Errors[o.code]++
			continue
		}
		ok = append(ok, lats[i])
	}
	if ended > 0 {
		p.Errors["ended_before_measured"] = ended
	}
	if len(p.Errors) == 0 {
		p.Errors = nil
	}
	slices.Sort(ok)
	p.OK, p.Latency = int64(len(ok)), latencyOf(ok)
	p.CallsPerSec = float64(p.OK) / elapsed.Seconds()
	if before.ok && during.ok {
		p.WorkerBytesInFlight = float64(during.rss-before.rss) / float64(n)
		p.RSSBytes = during.rss
		p.CPUScope = "workers"
	}
	if self.ok && selfDuring.ok {
		p.BenchBytesInFlight = float64(selfDuring.rss-self.rss) / float64(n)
	}
	return p
}
