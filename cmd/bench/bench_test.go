package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// TestMain lets the test binary stand in for the bench binary when the
// bench re-executes itself as a worker process.
func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" && len(os.Args) > 1 && os.Args[1] == "worker" {
		os.Exit(workerMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// guard bounds a whole run so a broken bench fails instead of hanging; it
// says nothing about speed.
const guard = 2 * time.Minute

func runBench(t *testing.T, args ...string) *report {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("parseFlags(%q): %v", args, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	t.Cleanup(cancel)
	var out bytes.Buffer
	rep, err := run(ctx, cfg, &out, nil)
	if err != nil {
		t.Fatalf("run %q: %v\n%s", args, err, out.String())
	}
	t.Logf("bench %s\n%s", strings.Join(args, " "), out.String())
	return rep
}

// checkReport asserts every expected series measured every call correctly.
func checkReport(t *testing.T, rep *report, want map[string][]string, concs int) {
	t.Helper()
	for _, sr := range rep.Scenarios {
		systems := want[sr.Name]
		if systems == nil {
			t.Errorf("unexpected scenario %s", sr.Name)
			continue
		}
		if got := systemsOf(sr); !slices.Equal(got, systems) {
			t.Errorf("%s: systems %v, want %v", sr.Name, got, systems)
		}
		if len(sr.Points) != len(systems)*concs {
			t.Errorf("%s: %d points, want %d", sr.Name, len(sr.Points), len(systems)*concs)
		}
		for _, p := range sr.Points {
			if len(p.Errors) > 0 || p.OK != p.Calls || p.Calls == 0 {
				t.Errorf("%s %s c=%d: %d calls, %d ok, errors %v", sr.Name, p.System, p.Conc, p.Calls, p.OK, p.Errors)
			}
			if p.Latency.P50 <= 0 || p.Latency.P50 > p.Latency.P99 || p.Latency.P99 > p.Latency.Max {
				t.Errorf("%s %s c=%d: percentiles out of order: %+v", sr.Name, p.System, p.Conc, p.Latency)
			}
		}
		delete(want, sr.Name)
	}
	for name := range want {
		t.Errorf("scenario %s missing from the report", name)
	}
}

func TestScenarios(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want map[string][]string
	}{
		{"echo", []string{"-s", "echo"}, map[string][]string{"echo": {"toolbus", "raw", "mcp-http"}}},
		{"echo over tcp", []string{"-s", "echo", "--transport", "tcp", "--systems", "toolbus,raw"},
			map[string][]string{"echo": {"toolbus", "raw"}}},
		{"payload under max_payload", []string{"-s", "payload", "--in", "2000", "--out", "3000"},
			map[string][]string{"payload": {"toolbus", "raw"}}},
		{"payload over max_payload", []string{"-s", "payload", "--max-payload", "65536", "--in", "1000", "--out", "300000"},
			map[string][]string{"payload": {"toolbus"}}},
		{"stream", []string{"-s", "stream", "--chunks", "50", "--chunk-size", "1024"},
			map[string][]string{"stream": {"toolbus", "raw"}}},
		{"stream, fast calls folded into the final", []string{"-s", "stream", "--chunks", "5", "--chunk-size", "10"},
			map[string][]string{"stream": {"toolbus", "raw"}}},
		{"sleep", []string{"-s", "sleep", "--sleep", "2ms", "--slots", "2", "--sleep-workers", "1,2"},
			map[string][]string{"sleep": {"toolbus-1w", "toolbus-2w"}}},
		{"cpu", []string{"-s", "cpu", "--iters", "50"}, map[string][]string{"cpu": {"toolbus", "raw"}}},
		{"cancel", []string{"-s", "cancel"}, map[string][]string{"cancel": {"toolbus", "raw"}}},
		{"groups", []string{"-s", "groups"}, map[string][]string{"groups": {"toolbus-2w"}}},
		{"sessions", []string{"-s", "sessions"}, map[string][]string{"sessions": {"queue", "pinned"}}},
		{"durable echo next to a raw JetStream work queue", []string{"-s", "echo", "--systems", "toolbus,durable,raw-js"},
			map[string][]string{"echo": {"toolbus", "durable", "raw-js"}}},
		{"open loop", []string{"-s", "echo", "--rate", "500", "-d", "100ms", "-n", "0"},
			map[string][]string{"echo": {"toolbus", "raw", "mcp-http"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"-c", "1,4", "-n", "30", "--warmup", "0", "--audit"}, tt.args...)
			rep := runBench(t, args...)
			checkReport(t, rep, tt.want, 2)
			for _, sr := range rep.Scenarios {
				for _, p := range sr.Points {
					// raw-js is the durable path's baseline, not toolbus's.
					core := slices.DeleteFunc(slices.Clone(sr.Baselines), func(b string) bool { return b == sysRawJS })
					if p.System == sysToolbus && len(core) > 0 && len(systemsOf(sr)) > 1 && len(p.Ratios) == 0 {
						t.Errorf("%s c=%d: no ratio to the baselines %v", sr.Name, p.Conc, sr.Baselines)
					}
				}
				if sr.Name == "cancel" || sr.Name == "groups" {
					for _, p := range sr.Points {
						if p.Extra == nil {
							t.Errorf("%s c=%d: no second latency", sr.Name, p.Conc)
						}
					}
				}
				if sr.Name == "stream" {
					for _, p := range sr.Points {
						if p.UnitsPerSec <= p.CallsPerSec {
							t.Errorf("stream %s: %v chunks/s for %v calls/s", p.System, p.UnitsPerSec, p.CallsPerSec)
						}
					}
				}
			}
		})
	}
}

// TestWorkerProcesses runs the bench against worker processes it starts
// itself (this test binary, re-executed in worker mode), including the
// fleet resize of the sleep scenario.
func TestWorkerProcesses(t *testing.T) {
	rep := runBench(t, "-s", "echo,sleep,cancel", "--workers", "2", "--audit", "--sleep-workers", "1,2", "--sleep", "2ms",
		"-c", "1,4", "-n", "30", "--warmup", "0")
	checkReport(t, rep, map[string][]string{
		"echo":   {"toolbus", "raw", "mcp-http"},
		"sleep":  {"toolbus-1w", "toolbus-2w"},
		"cancel": {"toolbus", "raw"},
	}, 2)
	for _, sr := range rep.Scenarios {
		for _, p := range sr.Points {
			if p.CPUScope != "" && p.CPUScope != "workers" {
				t.Errorf("%s: cpu scope %q with worker processes", sr.Name, p.CPUScope)
			}
		}
	}
	if !strings.Contains(rep.Topology, "worker processes") {
		t.Errorf("topology %q", rep.Topology)
	}
}

// TestFault kills worker processes under load: the durable path loses
// nothing, the core path reports what it loses as worker_lost, and the
// summary counts both.
func TestFault(t *testing.T) {
	rep := runBench(t, "--fault", "kill-worker", "--workers", "2", "--fault-every", "700ms", "--ack-wait", "1s",
		"--sleep", "20ms", "-c", "4", "-d", "2s", "-n", "0", "--warmup", "0")
	if len(rep.Scenarios) != 1 || rep.Scenarios[0].Name != "fault" {
		t.Fatalf("scenarios %+v", rep.Scenarios)
	}
	sr := rep.Scenarios[0]
	if got := systemsOf(sr); !slices.Equal(got, []string{"core", "core+retry", "durable"}) {
		t.Fatalf("systems %v", got)
	}
	for _, p := range sr.Points {
		lost := int64(0)
		for code, n := range p.Errors {
			if code != string(toolkit.CodeWorkerLost) || p.System == sysDurable {
				t.Errorf("%s: %d calls ended %s", p.System, n, code)
			}
			lost += n
		}
		if p.Faults == 0 || p.Calls == 0 || p.OK+lost != p.Calls {
			t.Errorf("%s: %d calls, %d ok, %d lost, %d workers killed", p.System, p.Calls, p.OK, lost, p.Faults)
		}
	}
	if !slices.ContainsFunc(rep.Summary, func(l string) bool { return strings.HasPrefix(l, "fault durable c=4:") }) {
		t.Errorf("summary %q", rep.Summary)
	}
}

// TestProcPass: --procs adds echo and stream against one worker process
// (c=1 and 64) and the summary checks their bars.
func TestProcPass(t *testing.T) {
	rep := runBench(t, "-s", "echo", "--systems", "toolbus,raw", "--procs", "-c", "1,4", "-n", "64", "--warmup", "0")
	checkReport(t, rep, map[string][]string{
		"echo":         {"toolbus", "raw"},
		"echo-1proc":   {"toolbus", "raw"},
		"stream-1proc": {"toolbus", "raw"},
	}, 2)
	for _, want := range []string{"separate processes, echo c=64:", "separate processes, echo c=1:", "separate processes, stream c=64:"} {
		if !slices.ContainsFunc(rep.Summary, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("no %q line in the summary %q", want, rep.Summary)
		}
	}
	for _, sr := range rep.Scenarios {
		for _, p := range sr.Points {
			if strings.HasSuffix(sr.Name, "-1proc") && (p.CPUScope != "workers" || p.WritesPerCall <= 0) {
				t.Errorf("%s %s c=%d: cpu scope %q, %v writes per call", sr.Name, p.System, p.Conc, p.CPUScope, p.WritesPerCall)
			}
		}
	}
}

// TestInFlight: the inflight scenario holds its calls in flight at once
// on worker processes and reports their memory per call.
func TestInFlight(t *testing.T) {
	// Room for every call on either worker: NATS spreads them at random,
	// and a call waiting for a slot is not in flight.
	rep := runBench(t, "-s", "inflight", "--workers", "2", "--inflight", "300", "--slots", "300", "--sleep", "2s", "--warmup", "0")
	if len(rep.Scenarios) != 1 || len(rep.Scenarios[0].Points) != 1 {
		t.Fatalf("scenarios %+v", rep.Scenarios)
	}
	p := rep.Scenarios[0].Points[0]
	if p.Calls != 300 || p.OK != 300 || p.Errors != nil || p.Workers != 2 || p.WorkerBytesInFlight == 0 {
		t.Fatalf("inflight point %+v", p)
	}
	if !slices.ContainsFunc(rep.Summary, func(l string) bool {
		return strings.HasPrefix(l, "inflight: 300 sleep calls at once on 2 worker processes:")
	}) {
		t.Errorf("summary %q", rep.Summary)
	}
}

// TestExternalServer points the bench at a server it did not start, with
// workers it starts itself (--workers) or workers it finds there.
func TestExternalServer(t *testing.T) {
	cfg, err := parseFlags([]string{"--transport", "tcp", "-s", "echo"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEnv(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.close)
	tests := []struct {
		name string
		args []string
		want map[string][]string
		note string
	}{
		{"workers from the bench", []string{"--workers", "1", "-s", "echo", "--systems", "toolbus,raw"},
			map[string][]string{"echo": {"toolbus", "raw"}}, ""},
		{"workers started separately", []string{"-s", "echo,sleep", "--mcp", e.mcpURL},
			map[string][]string{"echo": {"toolbus", "raw", "mcp-http"}, "sleep": {"toolbus"}}, ""},
		{"no MCP server known", []string{"-s", "echo"},
			map[string][]string{"echo": {"toolbus", "raw"}}, "mcp-http: no baseline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--nats", e.url, "-c", "2", "-n", "20", "--warmup", "0", "--sleep", "1ms"}, tt.args...)
			rep := runBench(t, args...)
			checkReport(t, rep, tt.want, 1)
			if tt.note != "" && !strings.Contains(rep.Scenarios[0].Note, tt.note) {
				t.Errorf("note %q, want it to say %q", rep.Scenarios[0].Note, tt.note)
			}
		})
	}
}

func TestOutputs(t *testing.T) {
	dir := t.TempDir()
	jsonPath, svgPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.svg")
	var stdout, stderr bytes.Buffer
	code := benchMain([]string{"-s", "echo,cancel", "--systems", "toolbus,raw", "-c", "1,2", "-n", "20", "--warmup", "0",
		"--json", jsonPath, "--svg", svgPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("progress or errors on a non-terminal stderr: %q", stderr.String())
	}
	for _, s := range []string{"echo", "cancel", "calls/s", "p99.9", "vs raw", "summary", "correctness: 0 calls failed"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, stdout.String())
		}
	}
	rep, b := readReport(t, jsonPath)
	if len(rep.Scenarios) != 2 || rep.Machine.CPUs == 0 || len(rep.Summary) == 0 {
		t.Errorf("json report incomplete: %s", b)
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(svg))
	lines := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("svg is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	// echo and cancel: toolbus and raw, one throughput line and p50 +
	// p99 each.
	if want := 2*3 + 2*3; lines != want {
		t.Errorf("svg has %d polylines, want %d", lines, want)
	}
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-s", "echo,nope"}, `unknown "nope"`},
		{[]string{"-s", ""}, "empty list"},
		{[]string{"--systems", "raw"}, "toolbus must be measured"},
		{[]string{"--systems", "grpc"}, `unknown "grpc"`},
		{[]string{"-c", "1,x"}, `"x" is not a whole number`},
		{[]string{"-c", "0"}, `"0" is not a whole number from 1`},
		{[]string{"-d", "0"}, "-d must be positive"},
		{[]string{"-n", "-1"}, "-n must not be negative"},
		{[]string{"--rate", "-5"}, "--rate must be"},
		{[]string{"--transport", "udp"}, "--transport must be inproc or tcp"},
		{[]string{"--workers", "-1"}, "--workers must be"},
		{[]string{"--max-payload", "-1"}, "--max-payload must be"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--max-payload", "1000"}, "cannot be used with --nats"},
		{[]string{"--nats", "::"}, "not a URL"},
		{[]string{"--chunks", "0"}, "--chunks must be"},
		{[]string{"--sleep", "-1s"}, "--sleep must be"},
		{[]string{"--slots", "0"}, "--slots must be"},
		{[]string{"--sleep-workers", "0"}, "--sleep-workers"},
		{[]string{"--iters", "-3"}, "--iters must be"},
		{[]string{"--out", "-3"}, "--out must be"},
		{[]string{"-s", "inflight"}, "give --workers"},
		{[]string{"-s", "inflight", "--workers", "2"}, "needs --sleep 2s or more"},
		{[]string{"-s", "inflight", "--workers", "2", "--sleep", "2s"}, "raise --slots"},
		{[]string{"-s", "inflight", "--inflight", "0"}, "--inflight must be"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--nope"}, "flag provided but not defined"},
		{[]string{"--systems", "toolbus,raw", "--mcp", "http://127.0.0.1:1/mcp"}, "--mcp is the endpoint of the mcp-http baseline"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stderr bytes.Buffer
			_, err := parseFlags(tt.args, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			if code := benchMain(tt.args, io.Discard, io.Discard); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
		})
	}
}

func TestWorkerModeBadFlags(t *testing.T) {
	for _, args := range [][]string{{}, {"--nats", "nats://127.0.0.1:1", "--slots", "0"}, {"--nope"}} {
		if code := workerMain(args, io.Discard, io.Discard); code != 2 {
			t.Errorf("worker %q: exit %d, want 2", args, code)
		}
	}
}

// TestChecks feeds the final checker the ways a call can go wrong: each
// must be counted as an error, never ignored.
func TestChecks(t *testing.T) {
	ok := &toolkit.Response{ID: "a", State: toolkit.StateSuccess, Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "hi"}}}
	other := &toolkit.Response{ID: "b", State: toolkit.StateSuccess, Content: ok.Content}
	failed := &toolkit.Response{ID: "a", State: toolkit.StateError, Code: toolkit.CodeTimeout}
	lost := &toolkit.Response{ID: "a", State: toolkit.StateSuccess, Content: ok.Content, Metadata: map[string]any{"lost_chunks": uint64(1)}}
	tests := []struct {
		name   string
		events []toolkit.Event
		want   string
	}{
		{"one right final", []toolkit.Event{{Chunk: &toolkit.Chunk{}}, {Final: ok}}, ""},
		{"no final", []toolkit.Event{{Chunk: &toolkit.Chunk{}}}, errNoFinal},
		{"two finals", []toolkit.Event{{Final: ok}, {Final: ok}}, errDupFinal},
		{"wrong id", []toolkit.Event{{Final: other}}, errWrongID},
		{"error code", []toolkit.Event{{Final: failed}}, string(toolkit.CodeTimeout)},
		{"lost chunks", []toolkit.Event{{Final: lost}}, errLostChunks},
		{"wrong content", []toolkit.Event{{Final: &toolkit.Response{ID: "a", State: toolkit.StateSuccess}}}, errBadContent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seq := func(yield func(toolkit.Event) bool) {
				for _, ev := range tt.events {
					if !yield(ev) {
						return
					}
				}
			}
			final, code := consume(seq, "a", nil)
			if got := checkText(final, code, "hi").code; got != tt.want {
				t.Errorf("code %q, want %q", got, tt.want)
			}
		})
	}
}

// TestAuditor publishes reply frames by hand on a real server: the
// auditor must count a call without a final, one with two finals and one
// with a sequence gap, and nothing for a correct call or an unknown id.
func TestAuditor(t *testing.T) {
	h := startHandReplies(t)
	a, send := h.a, h.send
	for _, id := range []string{"ok", "none", "twice", "gap"} {
		a.expect(id)
	}
	send("ok", 1, wire.KindChunk)
	send("ok", 2, wire.KindFinal)
	send("none", 1, wire.KindChunk)
	send("twice", 1, wire.KindFinal)
	send("twice", 2, wire.KindFinal)
	send("gap", 1, wire.KindChunk)
	send("gap", 3, wire.KindFinal)
	send("stranger", 1, wire.KindFinal)
	if err := h.pub.Publish(h.prefix+".raw", []byte("not a frame")); err != nil {
		t.Fatal(err)
	}
	h.pub.Flush()
	got := a.settle()
	want := map[string]int64{errWireNoFinal: 1, errWireDupFinal: 1, errWireSeqGap: 1}
	if !maps.Equal(got, want) {
		t.Errorf("audit %v, want %v", got, want)
	}
	if again := a.settle(); len(again) != 0 {
		t.Errorf("a second settle reported %v; calls must be forgotten", again)
	}
}

func TestRunLoad(t *testing.T) {
	var calls atomic.Int64
	call := func(_ context.Context, _, i int) outcome {
		n := calls.Add(1)
		if n%10 == 0 {
			return outcome{code: "tool_error"}
		}
		return outcome{units: 3}
	}
	measured := 0
	res := runLoad(context.Background(), loadSpec{conc: 4, calls: 100, warmup: 50 * time.Millisecond}, call, nil, func() {
		measured = int(calls.Load())
	})
	calls.Add(-int64(measured)) // the warm-up's calls
	if res.calls != 100 || calls.Load() != 100 {
		t.Fatalf("%d calls measured, %d made; want 100", res.calls, calls.Load())
	}
	if res.errors["tool_error"] != 10 || len(res.lats) != 90 || res.units != 270 {
		t.Errorf("errors %v, %d latencies, %d units", res.errors, len(res.lats), res.units)
	}
	if !slices.IsSorted(res.lats) {
		t.Error("latencies not sorted")
	}
}

// TestRounds: the series of one point take turns (A B, B A, ...) and each
// point sums its rounds.
func TestRounds(t *testing.T) {
	var mu sync.Mutex
	var order []string
	mk := func(name string) series {
		return series{system: name, call: func(ctx context.Context, g, i int) outcome {
			if g == 0 && i == 0 { // the first call of a round
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
			}
			time.Sleep(time.Millisecond)
			return outcome{units: 1}
		}}
	}
	e := &env{cfg: &config{dur: 400 * time.Millisecond, rounds: 4}, fleet: &localFleet{}}
	sc := &scenario{name: "echo", unitName: "units"}
	points := measureGroup(context.Background(), e, sc, []series{mk("a"), mk("b")}, 2, nil)
	if want := []string{"a", "b", "b", "a", "a", "b", "b", "a"}; !slices.Equal(order, want) {
		t.Errorf("turns %v, want %v", order, want)
	}
	for _, p := range points {
		// Four rounds of 100ms, each call 1ms, 2 callers: about 800.
		if p.Seconds < 0.35 || p.OK < 200 || p.OK != p.Calls || p.UnitsPerSec <= 0 {
			t.Errorf("%s: %d calls, %d ok over %.2fs, %.0f units/s", p.System, p.Calls, p.OK, p.Seconds, p.UnitsPerSec)
		}
	}
	// One series, or a point of a number of calls: one round.
	if n := e.rounds(sc, 1); n != 1 {
		t.Errorf("rounds for one series = %d", n)
	}
	e.cfg.calls = 10
	if n := e.rounds(sc, 2); n != 1 {
		t.Errorf("rounds with -n = %d", n)
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 1000; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500}, {0.9, 900}, {0.99, 990}, {0.999, 999}, {1, 1000}, {0.0001, 1}} {
		if got := percentile(d, tt.q); got != tt.want {
			t.Errorf("p%v = %v, want %v", tt.q*100, got, tt.want)
		}
	}
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing")
	}
}

// TestToolsBadInput: the bench tools refuse out-of-range input with
// invalid_input rather than running away.
func TestToolsBadInput(t *testing.T) {
	tk, err := benchToolkit(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	for _, tc := range []toolkit.ToolCall{
		{Name: "payload", Input: map[string]any{"out": -1}},
		{Name: "payload", Input: map[string]any{"out": maxOut + 1}},
		{Name: "stream", Input: map[string]any{"chunks": maxChunks + 1, "size": 1}},
		{Name: "stream", Input: map[string]any{"chunks": 1, "size": -1}},
		{Name: "sleep", Input: map[string]any{"ms": -1}},
		{Name: "sleep", Input: map[string]any{"ms": maxSleep + 1}},
		{Name: "cpu", Input: map[string]any{"iters": -1}},
	} {
		tc.ID = "x"
		if r := tk.Invoke(ctx, tc); r.Code != toolkit.CodeInvalidInput {
			t.Errorf("%s %v: %s %q, want invalid_input", tc.Name, tc.Input, r.Code, r.Text())
		}
	}
}

// TestDurationFlagWithoutUnit: a duration flag given a number without a
// unit (-d 10) says what a duration looks like, not "parse error".
func TestDurationFlagWithoutUnit(t *testing.T) {
	var errb strings.Builder
	if _, err := parseFlags([]string{"-d", "10"}, &errb); err == nil {
		t.Fatal("-d 10 accepted")
	}
	if got := errb.String(); !strings.Contains(got, `invalid value "10" for flag -d: want a duration such as 30s, 1m30s or 2h`) || !strings.Contains(got, "see bench -h for the flags") {
		t.Errorf("-d 10 says:\n%s", got)
	}
}

// readReport reads the --json report at path, and its bytes.
func readReport(t *testing.T, path string) (*report, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep, b
}
