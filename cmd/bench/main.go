package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	tbconfig "github.com/toolbus/toolbus/config"
	"github.com/toolbus/toolbus/internal/gcfloor"
	"github.com/toolbus/toolbus/internal/tty"
)

// config is everything a run is told by its flags.
type config struct {
	scenarios    []string
	systems      map[string]bool
	conc         []int
	dur          time.Duration
	calls        int
	warmup       time.Duration
	rate         float64
	transport    string
	natsURL      string
	workers      int
	mcpURL       string
	maxPayload   int32
	stall        time.Duration
	textSize     int
	inSize       int
	outSize      int
	chunks       int
	chunkSize    int
	sleep        time.Duration
	slots        int
	sleepWorkers []int
	iters        int
	jsonPath     string
	svgPath      string
	cpuProfile   string
	quiet        bool
	audit        bool
	ackWait      time.Duration // the workers' durable AckWait
	fault        string        // "" or "kill-worker"
	faultEvery   time.Duration // between two faults
	procPass     bool          // also measure the separate-process topology (procScenarios)
	inflight     int           // calls at once in the inflight scenario
	rounds       int           // turns the series of one point take (measure)
}

func (c *config) settings() map[string]string {
	s := map[string]string{
		"scenarios": strings.Join(c.scenarios, ","), "concurrency": joinInts(c.conc),
		"duration": c.dur.String(), "warmup": c.warmup.String(), "rounds": strconv.Itoa(c.rounds),
		"text": strconv.Itoa(c.textSize), "in": strconv.Itoa(c.inSize), "out": strconv.Itoa(c.outSize),
		"chunks": strconv.Itoa(c.chunks), "chunk_size": strconv.Itoa(c.chunkSize),
		"sleep": c.sleep.String(), "slots": strconv.Itoa(c.slots), "iters": strconv.Itoa(c.iters),
		"sleep_workers": joinInts(c.sleepWorkers),
	}
	var systems []string
	for _, sys := range knownSystems {
		if c.systems[sys] {
			systems = append(systems, sys)
		}
	}
	s["systems"] = strings.Join(systems, ",")
	if c.calls > 0 {
		// A point of -n calls is measured in one go, for as long as its
		// calls take: neither -d nor --rounds applies.
		s["calls"] = strconv.Itoa(c.calls)
		delete(s, "duration")
		delete(s, "rounds")
	}
	if c.rate > 0 {
		s["rate"] = strconv.FormatFloat(c.rate, 'f', -1, 64)
	}
	if c.audit {
		s["audit"] = "on"
	}
	return s
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// knownSystems are the systems --systems takes, in the order the
// settings list them.
var knownSystems = []string{sysToolbus, sysRaw, sysMCP, sysDurable, sysRawJS}

// minMaxPayload is the lowest --max-payload: a bench worker's
// announcement of its tools (with their schemas, about 3.5 KB) and the
// JetStream requests that create its buckets and streams must each fit
// in one message. TestMaxPayloadMinimum runs the scenarios that use them
// there.
const minMaxPayload = 4096

// minRate is the lowest --rate: one call every 1000s (a lower one's
// interval between calls would soon overflow a time.Duration).
const minRate = 0.001

const usage = `Usage: bench [flags]

Measures toolbus and its baselines side by side on the same server and
prints a table per scenario with the ratios. With no flags it runs the
default suite (about a minute): echo, stream, sleep with 1 and 3 workers, cancel.

Flags:
`

// parseFlags reads the command line; a bad value is an error that names
// the flag.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	scen := fs.String("s", "echo,stream,sleep,cancel", "scenarios, comma-separated, of "+strings.Join(allScenarios, ",")+"; all is every one but inflight (which needs its own --workers, --sleep and --slots: add it by name, all,inflight)")
	systems := fs.String("systems", "toolbus,raw,mcp-http", "systems to measure: toolbus plus the baselines raw and mcp-http; durable (toolbus's durable path) and raw-js (its baseline, a bare JetStream work queue) in echo")
	conc := fs.String("c", "1,16,64", "concurrency levels (callers in flight), comma-separated")
	tbconfig.DurationVar(fs, &cfg.dur, "d", time.Second, "measuring time per point (system × concurrency) (a `duration`)")
	fs.IntVar(&cfg.calls, "n", 0, "calls per point instead of -d")
	tbconfig.DurationVar(fs, &cfg.warmup, "warmup", 250*time.Millisecond, "warm-up before each point, not measured (a `duration`)")
	fs.IntVar(&cfg.rounds, "rounds", 4, "cut each point's measuring time into this many rounds in which the systems compared take turns (A B, B A, ...), so they share the machine's noise; 1 measures each system in one go")
	fs.Float64Var(&cfg.rate, "rate", 0, "open loop: calls per second in total (0 = closed loop); latency counts from each call's scheduled time")
	fs.StringVar(&cfg.transport, "transport", "inproc", "embedded server transport: inproc or tcp (loopback)")
	fs.StringVar(&cfg.natsURL, "nats", "", "external NATS server URL; workers must then be started separately unless --workers is given")
	fs.IntVar(&cfg.workers, "workers", 0, "start N worker processes on loopback (re-executing this binary); 0 = workers in this process")
	fs.StringVar(&cfg.mcpURL, "mcp", "", "MCP Streamable HTTP endpoint serving echo, for the mcp-http baseline (default: one the bench starts)")
	maxPayload := fs.Int("max-payload", 0, "embedded server max_payload in bytes, 4096 or more (0 = 1 MiB)")
	tbconfig.DurationVar(fs, &cfg.stall, "stall", 10*time.Second, "a call with no answer for this long is an error (guard, not a measurement) (a `duration`)")
	fs.IntVar(&cfg.textSize, "text", 128, "echo: text size in bytes")
	fs.IntVar(&cfg.inSize, "in", 1024, "payload: input size in bytes")
	fs.IntVar(&cfg.outSize, "out", 2<<20, "payload: output size in bytes (above max_payload the result travels in several chunks)")
	fs.IntVar(&cfg.chunks, "chunks", 100, "stream: chunks per call")
	fs.IntVar(&cfg.chunkSize, "chunk-size", 512, "stream: bytes per chunk")
	tbconfig.DurationVar(fs, &cfg.sleep, "sleep", 20*time.Millisecond, "sleep: how long each call sleeps (a `duration`)")
	fs.IntVar(&cfg.slots, "slots", 8, "sleep: calls one worker sleeps at once (its pool of a scarce resource)")
	sleepWorkers := fs.String("sleep-workers", "1,3", "sleep: fleet sizes to compare (in-process workers, or processes with --workers)")
	fs.IntVar(&cfg.iters, "iters", 2000, "cpu: sha256 rounds per call")
	fs.StringVar(&cfg.jsonPath, "json", "", "write all results as JSON to this file")
	fs.StringVar(&cfg.svgPath, "svg", "", "write throughput and latency charts as SVG to this file")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the bench process (go tool pprof)")
	fs.BoolVar(&cfg.quiet, "q", false, "no progress bar even on a terminal")
	fs.StringVar(&cfg.fault, "fault", "", "kill-worker: measure the fault scenario instead: sleep calls on the core path (with and without the client's retries) and the durable path while a worker process is killed (SIGKILL) and replaced every --fault-every; needs --workers 2 or more")
	tbconfig.DurationVar(fs, &cfg.faultEvery, "fault-every", 3*time.Second, "time between two faults (keep it apart from --ack-wait: a call delivered again at the moment of the next kill can be lost again) (a `duration`)")
	tbconfig.DurationVar(fs, &cfg.ackWait, "ack-wait", 2*time.Second, "the workers' durable AckWait: how long after a lost worker a durable call is delivered again (a `duration`)")
	fs.BoolVar(&cfg.audit, "audit", false, "also check every toolbus call on the wire (exactly one final frame, no sequence gaps) from a second connection; costs some throughput")
	fs.IntVar(&cfg.inflight, "inflight", 10_000, "inflight scenario: sleep calls (--sleep, 2s or more) in flight at once; run it with worker processes (--workers 3) that have room for them (--slots)")
	procs := fs.Bool("procs", false, "also measure echo and stream, c=1 and 64, with one worker process over TCP (the separate-process topology) after the in-process scenarios; on by default for the default suite (no -s) in process")
	if err := tbconfig.ParseFlags(fs, args, "bench -h"); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, reported{err}
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; the worker mode is \"bench worker\")", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg.procPass = *procs
	if !set["procs"] {
		cfg.procPass = !set["s"] && !set["workers"] && !set["nats"] && !set["fault"]
	}
	var err error
	// all leaves inflight out: its settings (worker processes, sleeps of
	// 2s or more, room for them) would refuse or reshape the rest.
	everyOne := slices.DeleteFunc(slices.Clone(allScenarios), func(s string) bool { return s == "inflight" })
	var list []string
	for v := range strings.SplitSeq(*scen, ",") {
		if strings.TrimSpace(v) == "all" {
			list = append(list, everyOne...)
		} else {
			list = append(list, v)
		}
	}
	if cfg.scenarios, err = parseList(strings.Join(list, ","), "-s", allScenarios); err != nil {
		return nil, err
	}
	sys, err := parseList(*systems, "--systems", knownSystems)
	if err != nil {
		return nil, err
	}
	cfg.systems = map[string]bool{}
	for _, s := range sys {
		cfg.systems[s] = true
	}
	if cfg.mcpURL != "" && !cfg.systems[sysMCP] {
		return nil, errors.New("--mcp is the endpoint of the mcp-http baseline, which --systems leaves out: add mcp-http to --systems, or leave out --mcp")
	}
	if !cfg.systems[sysToolbus] {
		return nil, errors.New("--systems: toolbus must be measured (the baselines are compared with it)")
	}
	if cfg.conc, err = parseInts(*conc, "-c", 1, 100_000); err != nil {
		return nil, err
	}
	if cfg.sleepWorkers, err = parseInts(*sleepWorkers, "--sleep-workers", 1, 64); err != nil {
		return nil, err
	}
	// defaultNote names a flag's default where a message quotes a value
	// the user did not give.
	defaultNote := func(name, value string) string {
		if set[name] {
			return ""
		}
		return fmt.Sprintf(" (the default -%s %s)", name, value)
	}
	checks := []struct {
		bad bool
		msg string
	}{
		{cfg.dur <= 0 && cfg.calls <= 0, "-d must be positive (or give -n)"},
		{cfg.calls < 0, "-n must not be negative"},
		{cfg.warmup < 0, "--warmup must not be negative"},
		{cfg.rounds < 1 || cfg.rounds > 100, "--rounds must be 1 to 100"},
		// NaN compares false with everything: it would run the closed loop.
		{math.IsNaN(cfg.rate) || cfg.rate < 0 || cfg.rate > 0 && cfg.rate < minRate || cfg.rate > 1e7, "--rate must be 0 (closed loop) or 0.001 to 10000000 calls/s"},
		// The rounds of a point take their calls from one schedule: a
		// round too short for one interval would send none in some
		// rounds, a system measured then with nothing to measure.
		{cfg.rate >= minRate && cfg.calls <= 0 && cfg.rate*(cfg.dur/time.Duration(max(cfg.rounds, 1))).Seconds() < 1,
			fmt.Sprintf("--rate %v schedules fewer than one call per round (-d %v cut into --rounds %d): raise --rate or -d, or give --rounds 1", cfg.rate, cfg.dur, cfg.rounds)},
		{cfg.transport != "inproc" && cfg.transport != "tcp", fmt.Sprintf("--transport must be inproc or tcp, not %q", cfg.transport)},
		{cfg.workers < 0 || cfg.workers > 64, "--workers must be 0 to 64"},
		{*maxPayload < 0 || *maxPayload > 64<<20, "--max-payload must be 0 to 64 MiB"},
		{*maxPayload != 0 && cfg.natsURL != "", "--max-payload sets the embedded server's limit; it cannot be used with --nats"},
		{*maxPayload > 0 && *maxPayload < minMaxPayload, fmt.Sprintf("--max-payload %d is under the %d bytes the bench needs (a worker's announcement of its tools and the JetStream requests must fit in one message): give %d or more, or 0 for the server's 1 MiB", *maxPayload, minMaxPayload, minMaxPayload)},
		{cfg.stall <= 0, "--stall must be positive"},
		{cfg.textSize < 0 || cfg.textSize > maxOut, fmt.Sprintf("--text must be 0 to %d", maxOut)},
		{cfg.inSize < 0 || cfg.inSize > maxOut, fmt.Sprintf("--in must be 0 to %d", maxOut)},
		{cfg.outSize < 0 || cfg.outSize > maxOut, fmt.Sprintf("--out must be 0 to %d", maxOut)},
		{cfg.chunks < 1 || cfg.chunks > maxChunks, fmt.Sprintf("--chunks must be 1 to %d", maxChunks)},
		{cfg.chunkSize < 1 || cfg.chunkSize > maxOut, fmt.Sprintf("--chunk-size must be 1 to %d", maxOut)},
		{cfg.sleep < 0 || cfg.sleep > maxSleep*time.Millisecond, "--sleep must be 0 to 60s"},
		// A worker runs at most workerMaxInFlight calls at once: more
		// slots would never be used, and the past ones answer overloaded.
		{cfg.slots < 1 || cfg.slots > workerMaxInFlight, fmt.Sprintf("--slots must be 1 to %d (the calls a bench worker runs at once)", workerMaxInFlight)},
		{cfg.iters < 0 || cfg.iters > maxIters, fmt.Sprintf("--iters must be 0 to %d", maxIters)},
		{cfg.ackWait <= 0, "--ack-wait must be positive"},
		{cfg.procPass && cfg.natsURL != "", "--procs measures one worker process; with --nats the workers there would take the calls too"},
		// Flags that another makes meaningless are refused, not ignored.
		{cfg.calls > 0 && set["d"], "-n and -d: give one (a point is -n calls or -d of measuring time)"},
		{cfg.calls > 0 && set["rounds"], "-n and --rounds: a point of -n calls is measured in one go; --rounds cuts -d"},
		{cfg.calls > 0 && cfg.calls < slices.Max(cfg.conc), fmt.Sprintf("-n %d is fewer calls than -c %d callers%s: the point would never have %d calls in flight", cfg.calls, slices.Max(cfg.conc), defaultNote("c", *conc), slices.Max(cfg.conc))},
		{cfg.calls > 0 && cfg.procPass && cfg.calls < slices.Max(procConc), fmt.Sprintf("-n %d is fewer calls than the %d callers of the separate-process pass (--procs, on for the default suite): its points would never have %d calls in flight; give -n %d or more, or --procs=false", cfg.calls, slices.Max(procConc), slices.Max(procConc), slices.Max(procConc))},
		{set["fault"] && set["s"], "--fault measures its own scenario (sleep calls while workers are killed): give it without -s"},
		{set["transport"] && cfg.natsURL != "", "--transport is the embedded server's; it cannot be used with --nats"},
		{cfg.transport == "inproc" && set["transport"] && cfg.workers > 0, "--transport inproc: worker processes (--workers) reach the server over TCP"},
		{set["sleep-workers"] && cfg.natsURL != "" && cfg.workers == 0, "--sleep-workers: with --nats and no --workers the fleet is the workers started separately; the bench cannot resize it"},
	}
	for _, c := range checks {
		if c.bad {
			return nil, errors.New(c.msg)
		}
	}
	if slices.Contains(cfg.scenarios, "inflight") {
		switch {
		case cfg.inflight < 1 || cfg.inflight > 100_000:
			return nil, errors.New("--inflight must be 1 to 100000")
		case cfg.workers < 1:
			return nil, errors.New("-s inflight measures worker processes: give --workers (3, say)")
		case cfg.sleep < 2*time.Second:
			return nil, errors.New("-s inflight needs --sleep 2s or more: the calls must all be running when memory is read")
		case cfg.slots*cfg.workers < cfg.inflight:
			return nil, fmt.Errorf("-s inflight: %d workers with --slots %d cannot run %d sleeps at once; raise --slots (to %d at most; NATS spreads the calls at random, so leave room above an even share) or give more --workers", cfg.workers, cfg.slots, cfg.inflight, workerMaxInFlight)
		}
	}
	switch cfg.fault {
	case "":
	case "kill-worker":
		if cfg.workers < 2 {
			return nil, errors.New("--fault kill-worker needs --workers 2 or more (worker processes to kill)")
		}
		if cfg.faultEvery <= 0 {
			return nil, errors.New("--fault-every must be positive")
		}
		if cfg.calls == 0 && cfg.dur < 2*cfg.faultEvery {
			if set["d"] {
				return nil, fmt.Errorf("--fault kill-worker: -d %v kills no worker or one: give at least twice --fault-every (%v)", cfg.dur, cfg.faultEvery)
			}
			cfg.dur = 3 * cfg.faultEvery // three faults per series
		}
		cfg.scenarios = []string{"fault"}
	default:
		return nil, fmt.Errorf("--fault: unknown %q (known: kill-worker)", cfg.fault)
	}
	outs := map[string]string{}
	for _, o := range []struct{ flag, path string }{{"--json", cfg.jsonPath}, {"--svg", cfg.svgPath}, {"--cpuprofile", cfg.cpuProfile}} {
		if o.path == "" {
			continue
		}
		p, err := filepath.Abs(o.path)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v", o.flag, o.path, err)
		}
		if other, ok := outs[p]; ok {
			return nil, fmt.Errorf("%s and %s name the same file %s: one would overwrite the other", other, o.flag, o.path)
		}
		outs[p] = o.flag
	}
	if cfg.natsURL != "" {
		for one := range strings.SplitSeq(cfg.natsURL, ",") {
			if u, err := url.Parse(strings.TrimSpace(one)); err != nil || u.Host == "" {
				return nil, fmt.Errorf("--nats %q: not a URL like nats://host:4222 (or a comma-separated list of them)", cfg.natsURL)
			}
		}
	}
	cfg.maxPayload = int32(*maxPayload)
	return cfg, nil
}

func parseList(s, flagName string, known []string) ([]string, error) {
	var out []string
	for v := range strings.SplitSeq(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if !slices.Contains(known, v) {
			return nil, fmt.Errorf("%s: unknown %q (known: %s)", flagName, v, strings.Join(known, ", "))
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", flagName)
	}
	return out, nil
}

func parseInts(s, flagName string, lo, hi int) ([]int, error) {
	var out []int
	for v := range strings.SplitSeq(s, ",") {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("%s: %q is not a whole number from %d to %d", flagName, v, lo, hi)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: empty list", flagName)
	}
	return out, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		gcfloor.Start(gcfloor.Default) // as the worker binary does
		os.Exit(workerMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(benchMain(os.Args[1:], os.Stdout, os.Stderr))
}

// reported is a flag error tbconfig.ParseFlags printed already.
type reported struct{ error }

func benchMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.As(err, new(reported)) {
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 2
	}
	// The report's files are tried before the run, not found unwritable
	// after it, its measurements lost.
	for _, o := range []struct{ flag, path string }{{"--json", cfg.jsonPath}, {"--svg", cfg.svgPath}} {
		if err := checkWritable(o.path); err != nil {
			fmt.Fprintf(stderr, "bench: %s: %v\n", o.flag, err)
			return 1
		}
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "bench: --cpuprofile:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var progress io.Writer
	if !cfg.quiet && isTerminal(stderr) {
		progress = stderr
	}
	rep, err := run(ctx, cfg, stdout, progress)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = errors.New("interrupted: the report holds the scenarios finished before")
		if rep == nil {
			err = errors.New("interrupted while the run started: nothing measured, no report written")
		}
	}
	if rep != nil && err != nil {
		rep.Error = err.Error() // a report cut short says so
	}
	if rep != nil && cfg.jsonPath != "" {
		if werr := writeJSON(cfg.jsonPath, rep); werr != nil {
			fmt.Fprintln(stderr, "bench: --json:", werr)
			return 1
		}
	}
	if rep != nil && cfg.svgPath != "" {
		if werr := writeSVG(cfg.svgPath, rep); werr != nil {
			fmt.Fprintln(stderr, "bench: --svg:", werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	return 0
}

// checkWritable says whether path ("" for none) can be written, leaving
// an existing file as it is and no new one behind.
func checkWritable(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return f.Close()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(path)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && tty.Is(f)
}

// workerMain is the hidden worker mode: serve the bench tools, the raw
// repliers and (with --mcp-listen) the MCP server until SIGTERM. It prints
// "ready [mcp-url]" once everything is subscribed.
func workerMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats", "", "NATS server URL")
	slots := fs.Int("slots", 8, "sleep slots")
	ackWait := new(time.Duration)
	tbconfig.DurationVar(fs, ackWait, "ack-wait", 2*time.Second, "durable AckWait (a `duration`)")
	mcpListen := fs.String("mcp-listen", "", "serve the MCP echo baseline on this address")
	if err := tbconfig.ParseFlags(fs, args, "bench worker -h"); errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "bench worker: unexpected argument %q (flags only: --nats URL)\n", fs.Arg(0))
		return 2
	case *natsURL == "" || *slots < 1 || *slots > workerMaxInFlight:
		fmt.Fprintf(stderr, "bench worker: --nats is required and --slots must be 1 to %d (the calls a bench worker runs at once)\n", workerMaxInFlight)
		return 2
	case *ackWait <= 0:
		fmt.Fprintln(stderr, "bench worker: --ack-wait must be positive")
		return 2
	}
	// A worker process's own CPU profile, for the separate-process
	// topology: TOOLBUS_BENCH_WORKER_PROFILE=file (each worker appends
	// its pid).
	if path := os.Getenv("TOOLBUS_BENCH_WORKER_PROFILE"); path != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	// A connection that is closed for good (the server gone longer than
	// the reconnect attempts last) ends the worker: left up, it served
	// nothing and said nothing, and whoever waited for it waited forever.
	ctx, lost := context.WithCancelCause(context.Background())
	defer lost(nil)
	opts := append([]nats.Option{nats.Name("toolbus-bench-worker"), nats.ClosedHandler(func(*nats.Conn) { lost(errServerLost) })},
		testConnOptions...)
	nc, err := nats.Connect(*natsURL, opts...)
	if err != nil {
		fmt.Fprintln(stderr, "bench worker:", err)
		return 1
	}
	defer nc.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	h, err := startHost(ctx, nc, hostOptions{slots: *slots, ackWait: *ackWait, mcpListen: *mcpListen})
	if err != nil {
		fmt.Fprintln(stderr, "bench worker:", err)
		return 1
	}
	fmt.Fprintln(stdout, strings.TrimSpace("ready "+h.mcpURL))
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.stop(sctx)
	if errors.Is(context.Cause(ctx), errServerLost) {
		fmt.Fprintf(stderr, "bench worker: %v (%s)\n", errServerLost, *natsURL)
		return 1
	}
	return 0
}

// testConnOptions are added to the options of the connections to a
// server given by URL, the worker's and the bench's (tests shorten their
// reconnecting).
var testConnOptions []nats.Option
