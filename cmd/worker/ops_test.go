package main_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestOperatorEndpoint: --http serves /healthz, /readyz and Prometheus
// metrics that count the calls by tool, state and code.
func TestOperatorEndpoint(t *testing.T) {
	w, _, get := opsEndpoint(t)
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	for range 2 {
		if _, se, code := toolctl(t, w.url, "call", "echo", `{"text":"hi"}`); code != 0 {
			t.Fatalf("echo: exit %d %s", code, se)
		}
	}
	// A call refused before it runs is counted too.
	if _, _, code := toolctl(t, w.url, "call", "echo", `{"text":5}`); code == 0 {
		t.Fatal("echo with a number: exit 0")
	}
	// A made-up tool name on the worker's pinned subject: answered
	// not_found, counted under <unknown> (labels stay bounded).
	nc := natstest.URLConn(t, w.url)
	if m, err := nc.RequestMsg(&nats.Msg{Subject: wire.PinnedSubject(w.instance, "made_up_tool", ""),
		Header: nats.Header{wire.HeaderContentType: {wire.ContentTypeJSON}}, Data: []byte(`{"id":"m1"}`)}, guard); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(string(m.Data), "not_found") {
		t.Fatalf("made-up tool: %q", m.Data)
	}
	_, metrics := get("/metrics")
	if strings.Contains(metrics, "made_up_tool") || !strings.Contains(metrics, `toolbus_worker_calls_total{code="not_found",state="error",tool="<unknown>"} 1`) {
		t.Errorf("a made-up tool's call in /metrics:\n%s", metrics)
	}
	for _, want := range []string{
		`toolbus_worker_calls_total{code="",state="success",tool="echo"} 2`,
		`toolbus_worker_call_duration_seconds_count{tool="echo"} 2`, // the calls that ran
		`toolbus_worker_calls_total{code="invalid_input",state="error",tool="echo"} 1`,
		`toolbus_worker_calls_in_flight 0`,
		`toolbus_nats_connected 1`,
		`toolbus_nats_reconnects_total 0`,
		`# TYPE toolbus_worker_calls_total counter`,
		`toolbus_worker_frames_total{kind="final"} 4`, // the made-up tool's too
		`toolbus_worker_frames_total{kind="chunk"} 0`,
		`toolbus_worker_cancelled_calls_total 0`,
		`toolbus_worker_overloaded_total 0`,
		`toolbus_worker_caller_gone_calls_total 0`,
		`toolbus_worker_jetstream_errors_total 0`,
		`toolbus_worker_dropped_messages_total{subscription="calls"} 0`,
		`toolbus_worker_dropped_messages_total{subscription="cancels"} 0`,
		`# TYPE toolbus_worker_dropped_messages_total counter`,
		`# TYPE toolbus_worker_sent_bytes_total counter`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	promtoolCheck(t, metrics)
}

// promtoolCheck runs promtool check metrics on a /metrics page. promtool
// comes from Debian's prometheus package, unpacked by ./scripts/test; CI
// must have it.
func promtoolCheck(t *testing.T, metrics string) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool is not installed (./scripts/test unpacks it into .testdeps/bin)")
		}
		t.Skip("promtool is not installed; ./scripts/test unpacks it into .testdeps/bin")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(metrics)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestVersionAndLogLevel: --version prints the version; --log-level
// overrides the configured level.
func TestVersionAndLogLevel(t *testing.T) {
	p := startProc(t, cleanEnv(t), workerBin, "--version")
	if code := p.exit(t); code != 0 || !strings.HasPrefix(p.stdout.String(), "toolbus worker ") {
		t.Fatalf("--version: exit %d %q", code, p.stdout)
	}
	w := startWorker(t, "--log-level", "debug")
	if _, se, code := toolctl(t, w.url, "call", "echo", `{"text":"hi"}`); code != 0 {
		t.Fatalf("echo: exit %d %s", code, se)
	}
	if !strings.Contains(w.stderr.String(), `"level":"DEBUG"`) {
		t.Errorf("no debug line with --log-level debug:\n%s", w.stderr)
	}
	p = startProc(t, cleanEnv(t), workerBin, "--log-level", "loud", "--check-config")
	if code := p.exit(t); code == 0 || !strings.Contains(p.stderr.String(), "flag --log-level") {
		t.Errorf("--log-level loud: exit %d\n%s", code, p.stderr)
	}
}

// TestProbe: worker --probe URL is a healthcheck: 0 when the URL answers
// 200, 1 otherwise. The address --http was given, without http://, is
// probed over HTTP: it was refused as "first path segment in URL cannot
// contain colon".
func TestProbe(t *testing.T) {
	_, addr, _ := opsEndpoint(t)
	p := startProc(t, cleanEnv(t), workerBin, "--probe", "http://"+addr+"/readyz")
	if code := p.exit(t); code != 0 {
		t.Errorf("probe of /readyz: exit %d\n%s", code, p.stderr)
	}
	p = startProc(t, cleanEnv(t), workerBin, "--probe", addr+"/readyz")
	if code := p.exit(t); code != 0 {
		t.Errorf("probe of /readyz without http://: exit %d\n%s", code, p.stderr)
	}
	p = startProc(t, cleanEnv(t), workerBin, "--probe", "http://"+addr+"/nope")
	if code := p.exit(t); code != 1 || !strings.Contains(p.stderr.String(), "404") {
		t.Errorf("probe of a missing page: exit %d\n%s", code, p.stderr)
	}
}

// TestReadyzWhileDraining: a stopping worker is no longer ready while its
// running calls finish.
func TestReadyzWhileDraining(t *testing.T) {
	w, _, get := opsEndpoint(t, "--grace", "20s")
	c, err := bus.NewClient(natstest.URLConn(t, w.url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan *toolkit.Response, 1)
	go func() {
		done <- c.Invoke(secureCtx(t), toolkit.ToolCall{Name: "sleep", Input: map[string]any{"seconds": 2}})
	}()
	natstest.WaitFor(t, "the sleep call to run", func() bool {
		_, m := get("/metrics")
		return strings.Contains(m, "toolbus_worker_calls_in_flight 1")
	})
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "/readyz to say draining", func() bool {
		code, body := get("/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "draining")
	})
	if r := <-done; r.State != toolkit.StateSuccess {
		t.Errorf("the running call: %+v", r)
	}
}

// opsEndpoint starts a worker with --http on a free port and returns it,
// the endpoint's address and a GET of one of its paths (status and body;
// 0 and the error when it cannot connect).
func opsEndpoint(t *testing.T, args ...string) (*worker, string, func(path string) (int, string)) {
	t.Helper()
	w := startWorker(t, append([]string{"--http", "127.0.0.1:0"}, args...)...)
	var addr string
	for _, line := range strings.Split(w.stderr.String(), "\n") {
		var ready struct {
			Msg  string `json:"msg"`
			HTTP string `json:"http"`
		}
		if json.Unmarshal([]byte(line), &ready) == nil && ready.Msg == "toolbus worker ready" {
			addr = ready.HTTP
		}
	}
	if addr == "" {
		t.Fatalf("no http address in the ready line:\n%s", w.stderr)
	}
	return w, addr, func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// TestMCPServerDownIsDegraded: a mounted MCP server that cannot be
// reached leaves the worker ready, degraded, and shows in
// toolbus_mcp_server_up.
func TestMCPServerDownIsDegraded(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	mustWrite(t, cfg, "mcp_servers:\n  - name: gone\n    url: http://127.0.0.1:1/mcp\n    connect_timeout: 1s\n")
	_, _, get := opsEndpoint(t, "--config", cfg)
	if code, body := get("/readyz"); code != 200 || body != "ready, degraded: MCP server gone down\n" {
		t.Errorf("/readyz: %d %q", code, body)
	}
	_, metrics := get("/metrics")
	if want := `toolbus_mcp_server_up{server="gone"} 0`; !strings.Contains(metrics, want) {
		t.Errorf("/metrics lacks %q", want)
	}
	promtoolCheck(t, metrics)
}

// natsCLI runs natscli (`nats`, installed into .testdeps/bin by
// ./scripts/test; CI must have it) against url.
func natsCLI(t *testing.T, url string, args ...string) string {
	t.Helper()
	path, err := exec.LookPath("nats")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("natscli is not installed (./scripts/test installs it into .testdeps/bin)")
		}
		t.Skip("natscli is not installed; ./scripts/test installs it into .testdeps/bin")
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"--server", url, "--no-context"}, args...)...)
	cmd.Env = append(cleanEnv(t), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nats %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestNatsMicro: natscli's `nats micro` finds every worker of the fleet,
// its endpoints (one per tool) and their request and error counts.
func TestNatsMicro(t *testing.T) {
	w := startWorker(t)
	w2 := startWorker(t, "--nats", w.url)
	if _, se, code := toolctl(t, w.url, "call", "echo", `{"text":"hi"}`); code != 0 {
		t.Fatalf("toolctl call: %d %s", code, se)
	}
	ls := natsCLI(t, w.url, "micro", "ls")
	for _, want := range []string{"toolbus", w.instance, w2.instance} {
		if !strings.Contains(ls, want) {
			t.Errorf("nats micro ls lacks %q:\n%s", want, ls)
		}
	}
	info := natsCLI(t, w.url, "micro", "info", "toolbus", w.instance)
	for _, want := range []string{"tools.call.echo", "tools.call.view_text_file", "toolbus"} {
		if !strings.Contains(info, want) {
			t.Errorf("nats micro info lacks %q:\n%s", want, info)
		}
	}
	stats := natsCLI(t, w.url, "micro", "stats", "toolbus", "--json")
	var got []struct {
		ID        string `json:"id"`
		Endpoints []struct {
			Name        string `json:"name"`
			NumRequests int    `json:"num_requests"`
		} `json:"endpoints"`
	}
	if err := json.Unmarshal([]byte(stats), &got); err != nil {
		t.Fatalf("nats micro stats --json: %v\n%s", err, stats)
	}
	echoes := 0
	for _, inst := range got {
		for _, e := range inst.Endpoints {
			if e.Name == "echo" {
				echoes += e.NumRequests
			}
		}
	}
	if len(got) != 2 || echoes != 1 {
		t.Fatalf("nats micro stats: %d instances, %d echo requests:\n%s", len(got), echoes, stats)
	}
}

// TestToolctlTop: toolctl top --once against a loaded two-worker fleet
// prints the busy tool with a non-zero rate, served by both workers.
func TestToolctlTop(t *testing.T) {
	w := startWorker(t)
	startWorker(t, "--nats", w.url)
	c, err := bus.NewClient(natstest.URLConn(t, w.url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "load"}})
			}
		}()
	}
	out, se, code := toolctl(t, w.url, "top", "--once", "--interval", "1s")
	stop()
	wg.Wait()
	if code != 0 {
		t.Fatalf("toolctl top: exit %d %s", code, se)
	}
	var echo []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 6 && f[0] == "echo" {
			echo = f
		}
	}
	if !strings.HasPrefix(out, "2 workers") || echo == nil || echo[1] != "2" || echo[2] == "0.0" {
		t.Fatalf("toolctl top --once:\n%s", out)
	}
}
