package main

import (
	"context"
	"errors"
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
// throughput (higher is better) and p50 latency (lower is better; 0, left
// out, when no call of the point ended well: there is no latency).
type ratio struct {
	Throughput float64 `json:"throughput"`
	P50        float64 `json:"p50,omitempty"`
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
	// Error is why the run ended before its end (interrupted, the server
	// lost, ...); the scenarios are those finished before.
	Error string `json:"error,omitempty"`
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
func run(ctx context.Context, cfg *config, out io.Writer, progress io.Writer) (_ *report, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer func() { err = lossOf(ctx, err, cfg) }()
	e, err := newEnv(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer e.close()
	e.watch(ctx, cancel)
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

// errServerLost ends a run, or a bench worker, whose connection was
// closed for good.
var errServerLost = errors.New("lost the NATS server: the connection is closed, its reconnect attempts spent")

// watch ends ctx when the run loses its server or a worker process, until
// ctx is done. A server gone for good: the calls would otherwise fail at
// once on the closed connection, as fast as the callers can make them,
// to the end of every remaining point. A worker process gone: the points
// would be measured on a fleet other than the one reported.
func (e *env) watch(ctx context.Context, cancel context.CancelCauseFunc) {
	go func() {
		select {
		case <-e.lost:
			cancel(errServerLost)
		case err := <-e.exited:
			cancel(err)
		case <-ctx.Done():
		}
	}()
}

// lossOf returns err, or the loss (server, worker process) that ended
// ctx and so caused it.
func lossOf(ctx context.Context, err error, cfg *config) error {
	cause := context.Cause(ctx)
	switch {
	case err == nil:
	case errors.Is(cause, errServerLost):
		return fmt.Errorf("%w (%s)", errServerLost, cfg.natsURL)
	case errors.As(cause, new(*workerExit)):
		return fmt.Errorf("lost a worker process while the run used it (its scenario is left out, measured on a fleet other than the one reported): %w", cause)
	}
	return err
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
// at each concurrency so they share the machine's noise: each point's
// measuring time is cut into rounds, and the series take turns round by
// round (A B, B A, A B, ...), so that a slow stretch of the machine falls
// on all of them rather than on whichever was measured then.
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
			p, err := measureInFlight(ctx, e, sc.series[0], progress)
			if err != nil {
				return sr, err
			}
			sr.Points = append(sr.Points, p)
			continue
		}
		var group []series
		for _, s := range sc.series {
			if s.workers == n {
				group = append(group, s)
			}
		}
		for _, c := range e.cfg.conc {
			sr.Points = append(sr.Points, measureGroup(ctx, e, sc, group, c, progress)...)
			if ctx.Err() != nil {
				return sr, ctx.Err()
			}
		}
	}
	// A baseline left out (--systems, or none possible: a payload over
	// max_payload) has no column and is not listed.
	sr.Baselines = slices.DeleteFunc(slices.Clone(sr.Baselines), func(b string) bool {
		return !slices.ContainsFunc(sr.Points, func(p point) bool { return p.System == b })
	})
	computeRatios(&sr)
	return sr, nil
}

// rounds is how many turns the series of one point take: --rounds when
// they measure for a time and are several, else 1 (a point of -n calls,
// the fault scenario, whose faults come at their own pace).
func (e *env) rounds(sc *scenario, series int) int {
	if series < 2 || e.cfg.calls > 0 || sc.name == "fault" {
		return 1
	}
	return max(e.cfg.rounds, 1)
}

// measureGroup measures the series of group at concurrency c in turns and
// returns a point per series.
func measureGroup(ctx context.Context, e *env, sc *scenario, group []series, c int, progress io.Writer) []point {
	rounds := e.rounds(sc, len(group))
	tallies := make([]tally, len(group))
	for r := range rounds {
		spec := loadSpec{conc: c, dur: e.cfg.dur / time.Duration(rounds), calls: e.cfg.calls, rate: e.cfg.rate}
		spec.phase = time.Duration(r) * spec.dur
		if r == 0 {
			spec.warmup = e.cfg.warmup
		}
		for k := range group {
			i := k
			if r%2 == 1 {
				i = len(group) - 1 - k
			}
			label := fmt.Sprintf("%-7s %-12s c=%-4d", sc.name, group[i].label(), c)
			if rounds > 1 {
				label += fmt.Sprintf(" %d/%d", r+1, rounds)
			}
			tallies[i].add(measureRound(ctx, e, sc, group[i], spec, label, progress))
			if ctx.Err() != nil {
				break
			}
		}
	}
	points := make([]point, len(group))
	for i, s := range group {
		points[i] = tallies[i].point(sc, s, c, e.cfg.rate)
		if _, ext := e.fleet.(externalFleet); ext && points[i].CPUScope == "process" {
			// The server and the workers run elsewhere: this process's
			// CPU is its callers' alone, not the system's cost.
			points[i].CPUScope = "callers"
		}
	}
	return points
}

// round is one turn of a series: its load's result and what the worker
// processes (or this process) used meanwhile.
type round struct {
	res           loadResult
	before, after procUsage
	workers       bool // usage is of worker processes
	audit         map[string]int64
	faults        int64
}

func measureRound(ctx context.Context, e *env, sc *scenario, s series, spec loadSpec, label string, progress io.Writer) round {
	var done atomic.Int64
	stopBar := startBar(progress, label, spec, &done)
	pids := e.fleet.pids()
	var rd round
	var faults atomic.Int64
	stopFaults := func() {}
	rd.res = runLoad(ctx, spec, s.call, &done, func() {
		if e.audit != nil && spec.warmup > 0 {
			e.audit.settle() // the warm-up's calls, not the point's
		}
		rd.before = usageOf(pids)
		if sc.name == "fault" {
			stopFaults = injectFaults(ctx, e, &faults, spec)
		}
	})
	stopFaults()
	rd.after = usageOf(pids)
	stopBar()
	rd.workers, rd.faults = len(pids) > 0, faults.Load()
	if e.audit != nil {
		rd.audit = e.audit.settle()
	}
	return rd
}

// tally sums the rounds of one series.
type tally struct {
	res     loadResult
	cpu     time.Duration
	writes  int64
	rss     int64
	usage   bool // every round's usage was read
	workers bool
	audit   map[string]int64
	faults  int64
	rounds  int
}

func (t *tally) add(rd round) {
	if t.rounds == 0 {
		t.usage, t.res.errors, t.audit = true, map[string]int64{}, map[string]int64{}
	}
	t.rounds++
	r := &t.res
	r.elapsed += rd.res.elapsed
	r.calls += rd.res.calls
	r.units += rd.res.units
	r.cross += rd.res.cross
	r.again += rd.res.again
	for k, v := range rd.res.errors {
		r.errors[k] += v
	}
	for k, v := range rd.audit {
		t.audit[k] += v
	}
	r.lats = append(r.lats, rd.res.lats...)
	r.extras = append(r.extras, rd.res.extras...)
	t.faults += rd.faults
	t.workers = rd.workers
	if !rd.before.ok || !rd.after.ok {
		t.usage = false
		return
	}
	t.cpu += rd.after.cpu - rd.before.cpu
	t.writes += rd.after.writes - rd.before.writes
	t.rss = rd.after.rss
}

func (t *tally) point(sc *scenario, s series, c int, rate float64) point {
	res := &t.res
	slices.Sort(res.lats)
	slices.Sort(res.extras)
	p := point{
		Scenario: sc.name, System: s.label(), Workers: s.workers, Conc: c, Rate: rate,
		Calls: res.calls, OK: int64(len(res.lats)), Seconds: res.elapsed.Seconds(),
		Latency: latencyOf(res.lats), Errors: res.errors, Cross: res.cross, Units: sc.unitName,
		Again: res.again, Faults: t.faults,
	}
	for k, n := range t.audit {
		p.Errors[k] += n
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
	if t.usage && t.rounds > 0 {
		p.CPUCores = t.cpu.Seconds() / res.elapsed.Seconds()
		if p.OK > 0 {
			p.CPUPerCall = float64(t.cpu) / float64(time.Microsecond) / float64(p.OK)
		}
		p.RSSBytes = t.rss
		if t.workers && p.OK > 0 {
			p.WritesPerCall = float64(t.writes) / float64(p.OK)
		}
		p.CPUScope = "workers"
		if !t.workers {
			p.CPUScope = "process"
		}
	}
	return p
}

// injectFaults kills and replaces a worker process every --fault-every
// until the returned function is called or, for a point measured for a
// time, that time (spec.dur) is up: the calls still in flight then are
// finished without more faults, as -d / --fault-every counts them.
func injectFaults(ctx context.Context, e *env, faults *atomic.Int64, spec loadSpec) (stop func()) {
	f, ok := e.fleet.(*procFleet)
	if !ok {
		return func() {}
	}
	var cancel context.CancelFunc
	if spec.calls <= 0 {
		ctx, cancel = context.WithTimeout(ctx, spec.dur)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
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
			if ctx.Err() != nil {
				// A tick that waited while a slow kill replaced its worker
				// (a loaded machine): the measuring time is over.
				return
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
			if (b == sysRawJS) != (p.System == sysDurable) {
				continue // raw-js is the durable path's baseline, and only its
			}
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

// procConc are the concurrencies of the separate-process pass, whatever
// -c says.
var procConc = []int{1, 64}

// runProcPass measures echo and stream against one worker process over
// TCP, c=1 and 64, toolbus and raw: the topology every real fleet has,
// next to the in-process one. Its scenarios are named <scenario>-1proc.
func runProcPass(ctx context.Context, cfg *config, rep *report, out, progress io.Writer) (err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	pc := *cfg
	defer func() { err = lossOf(ctx, err, &pc) }()
	pc.workers, pc.procPass, pc.audit = 1, false, false
	pc.scenarios = []string{"echo", "stream"}
	pc.conc = procConc
	pc.systems = map[string]bool{sysToolbus: true, sysRaw: true}
	e, err := newEnv(ctx, &pc)
	if err != nil {
		return err
	}
	defer e.close()
	e.watch(ctx, cancel)
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

// testInFlightSent, when set, is called once the inflight scenario's
// calls are all started (tests interrupt the wait that follows).
var testInFlightSent func()

// measureInFlight starts --inflight calls at once, reads the memory of the
// worker processes and of this process while they all run (once every
// call has been seen started by its worker, or has ended: the sleep tool
// reports progress when it holds its slot), and waits for their finals.
// A call that ended well before memory was read was not in flight then:
// counted as ended_before_measured.
func measureInFlight(ctx context.Context, e *env, s series, progress io.Writer) (point, error) {
	if err := ctx.Err(); err != nil {
		return point{}, err
	}
	n := e.cfg.inflight
	pids := e.fleet.pids()
	runtime.GC()
	before, self := usageOf(pids), readUsage("self")
	var done, endedWell atomic.Int64
	stopBar := startBar(progress, fmt.Sprintf("%-7s %-12s n=%-6d", "inflight", s.label(), n), loadSpec{conc: n, calls: n}, &done)
	outs := make([]outcome, n)
	lats := make([]time.Duration, n)
	// pending counts the calls neither seen started nor ended; the last
	// to leave it closes allStarted.
	var pending atomic.Int64
	pending.Store(int64(n))
	allStarted := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			var once sync.Once
			leave := func() {
				once.Do(func() {
					if pending.Add(-1) == 0 {
						close(allStarted)
					}
				})
			}
			t := time.Now()
			outs[i] = s.held(ctx, leave)
			lats[i] = time.Since(t)
			if outs[i].code == "" {
				endedWell.Add(1)
			}
			done.Add(1)
			leave() // after the counts: memory may be read at once
		})
	}
	if testInFlightSent != nil {
		testInFlightSent()
	}
	// An interrupt here ends the wait: the calls, cancelled with ctx,
	// end, and nothing is reported of a point cut short.
	select {
	case <-allStarted:
	case <-ctx.Done():
	}
	during, selfDuring := usageOf(pids), readUsage("self")
	// well before ended: a call counts in endedWell before done.
	well := endedWell.Load()
	ended := done.Load()
	wg.Wait()
	elapsed := time.Since(start)
	stopBar()
	if err := ctx.Err(); err != nil {
		return point{}, err
	}
	p := point{Scenario: "inflight", System: s.label(), Workers: len(pids), Conc: n, Calls: int64(n), Seconds: elapsed.Seconds(), Errors: map[string]int64{}}
	var ok []time.Duration
	for i, o := range outs {
		if o.code != "" {
			p.Errors[o.code]++
			continue
		}
		ok = append(ok, lats[i])
	}
	// A call that failed is counted under its code; one that ended well
	// before memory was read was not in flight when it should have been.
	if well > 0 {
		p.Errors["ended_before_measured"] = well
	}
	if len(p.Errors) == 0 {
		p.Errors = nil
	}
	slices.Sort(ok)
	p.OK, p.Latency = int64(len(ok)), latencyOf(ok)
	p.CallsPerSec = float64(p.OK) / elapsed.Seconds()
	running := max(int64(n)-ended, 1) // the calls in flight when memory was read
	if before.ok && during.ok {
		p.WorkerBytesInFlight = float64(during.rss-before.rss) / float64(running)
		p.RSSBytes = during.rss // CPU is not measured: no scope, "-" in the table
	}
	if self.ok && selfDuring.ok {
		p.BenchBytesInFlight = float64(selfDuring.rss-self.rss) / float64(running)
	}
	return p, nil
}
