package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// `toolctl mcp` is tested as a process: the real binary, built once, in
// front of a real embedded nats-server and worker, driven by a go-sdk
// client and by the MCP Inspector CLI (installed by scripts/test under
// .testdeps/; skipped without it, failed under CI=true).

// mcpGuard only keeps a broken build from hanging the run.
const mcpGuard = 60 * time.Second

var (
	buildOnce  sync.Once
	toolctlExe string
	buildErr   error
)

// TestMain removes the toolctl binary toolctlBinary built, so that
// every run does not leave one in the temporary directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if toolctlExe != "" {
		os.RemoveAll(filepath.Dir(toolctlExe))
	}
	os.Exit(code)
}

// toolctlBinary builds cmd/toolctl once per test run.
func toolctlBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "toolctl-mcp-")
		if err != nil {
			buildErr = err
			return
		}
		toolctlExe = filepath.Join(dir, "toolctl")
		out, err := exec.Command("go", "build", "-o", toolctlExe, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return toolctlExe
}

type mcpStepsIn struct {
	N int `json:"n"`
}

// startMCPFleet runs NATS on a loopback port and a worker with echo and
// steps (progress), and returns the NATS URL.
func startMCPFleet(t *testing.T) string {
	t.Helper()
	srv := natstest.Embedded(t, true)
	nc := natstest.Connect(t, srv)
	state, err := bus.NewKVState(natstest.Ctx(t), natstest.JS(t, nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	for _, tool := range []*toolkit.Tool{
		toolkit.Func("echo", "Echo the text back.", func(ctx context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		}),
		toolkit.Stream("steps", "Report n progress steps, then answer done.", func(ctx context.Context, in mcpStepsIn, w toolkit.Writer) error {
			for i := 1; i <= in.N; i++ {
				if err := w.Progress(toolkit.Progress{Progress: float64(i), Total: float64(in.N)}); err != nil {
					return err
				}
				time.Sleep(20 * time.Millisecond) // outlive the worker's flush window
			}
			return w.Write(toolkit.Text("done"))
		}),
	} {
		if err := tk.Add(tool); err != nil {
			t.Fatal(err)
		}
	}
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), mcpGuard)
		defer cancel()
		w.Stop(ctx)
	})
	return srv.ClientURL()
}

// mcpEnv is the environment of the processes: no NATS_* of the machine,
// NATS_URL pointing at the test's server, a HOME of the test's own.
func mcpEnv(t *testing.T, url string) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NATS_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	home := t.TempDir()
	return append(env, "NATS_URL="+url, "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "catalog.json"))
}

func connectMCP(t *testing.T, transport sdk.Transport) (*sdk.ClientSession, chan *sdk.ProgressNotificationParams) {
	t.Helper()
	progress := make(chan *sdk.ProgressNotificationParams, 16)
	client := sdk.NewClient(&sdk.Implementation{Name: "toolctl-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) { progress <- req.Params },
	})
	ctx, cancel := context.WithTimeout(context.Background(), mcpGuard)
	defer cancel()
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, progress
}

// exercise lists the tools, calls echo and calls steps with progress.
func exercise(t *testing.T, cs *sdk.ClientSession, progress chan *sdk.ProgressNotificationParams) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpGuard)
	defer cancel()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	if strings.Join(names, ",") != "echo,steps" {
		t.Errorf("tools = %v, want echo and steps", names)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); res.IsError || !ok || tc.Text != "hello" {
		t.Errorf("echo = %+v", res)
	}
	p := &sdk.CallToolParams{Name: "steps", Arguments: map[string]any{"n": 2}}
	p.SetProgressToken("t1")
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		t.Fatalf("steps = %+v, %v", res, err)
	}
	for i := 1; i <= 2; i++ {
		select {
		case n := <-progress:
			if n.Progress != float64(i) || n.Total != 2 {
				t.Errorf("progress %d = %+v", i, n)
			}
		case <-time.After(mcpGuard):
			t.Fatalf("progress %d never arrived", i)
		}
	}
}

// inspectorCLI returns the command line that runs the installed MCP
// Inspector in CLI mode.
func inspectorCLI(t *testing.T) []string {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		msg := what + " is not installed; run scripts/test (it installs testdata/npm/package.json into .testdeps/)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node")
	}
	p, err := filepath.Abs(filepath.Join("..", "..", ".testdeps", "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		missing("@modelcontextprotocol/inspector")
	}
	return []string{"node", p, "--cli"}
}

func runInspector(t *testing.T, env []string, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), mcpGuard)
	defer cancel()
	argv := append(inspectorCLI(t), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector output is not JSON: %v\n%s", err, out)
	}
	return v
}

func inspectorEcho(t *testing.T, env []string, target ...string) {
	t.Helper()
	res := runInspector(t, env, append(target, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=hello")...)
	content, _ := res["content"].([]any)
	if len(content) != 1 || content[0].(map[string]any)["text"] != "hello" {
		t.Errorf("inspector echo = %v", res)
	}
}

func TestMCPStdio(t *testing.T) {
	bin := toolctlBinary(t)
	url := startMCPFleet(t)
	env := mcpEnv(t, url)
	cmd := exec.Command(bin, "mcp", "stdio", "--session", "agent-1")
	cmd.Env = env
	cmd.Stderr = os.Stderr
	cs, progress := connectMCP(t, &sdk.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second})
	exercise(t, cs, progress)
	if err := cs.Close(); err != nil {
		t.Errorf("toolctl mcp stdio did not exit cleanly when stdin closed: %v", err)
	}

	t.Run("inspector", func(t *testing.T) {
		// The Inspector gives a stdio server only a minimal environment.
		inspectorEcho(t, env, bin, "mcp", "stdio", "-e", "NATS_URL="+url)
	})
}

// TestMCPStdioEOF: a client that writes its requests and closes stdin
// still gets their answers; toolctl exits after them.
func TestMCPStdioEOF(t *testing.T) {
	url := startMCPFleet(t)
	stdout, stderr, err, exited := stdioAtEOF(t, url, mcpGuard,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":10}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after EOF"}}}`)
	switch {
	case !exited:
		t.Fatal("toolctl mcp stdio did not exit after stdin closed")
	case err != nil:
		t.Fatalf("toolctl mcp stdio: %v\n%s", err, stderr)
	}
	answered := map[float64]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var m struct {
			ID     *float64        `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID != nil {
			answered[*m.ID] = string(m.Result)
		}
	}
	if !strings.Contains(answered[2], `"done"`) || !strings.Contains(answered[3], `"after EOF"`) {
		t.Errorf("answers %v; want calls 2 and 3 answered\nstderr:\n%s", answered, stderr)
	}
}

// TestMCPStdioBatchRefused: under 2025-06-18 (batches were removed from
// MCP in that version) a JSON-RPC batch is refused with a JSON-RPC error
// (-32600, id null) saying so, and the session and its calls go on.
// Before, the go-sdk ended the session at the batch: exit 1, the call in
// flight interrupted with its answer never written, and the requests after
// the batch never read.
func TestMCPStdioBatchRefused(t *testing.T) {
	bin := toolctlBinary(t)
	url := startMCPFleet(t)
	cmd := exec.Command(bin, "mcp", "stdio")
	cmd.Env = mcpEnv(t, url)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	select {
	case line := <-lines:
		if !strings.Contains(line, `"id":1`) {
			t.Fatalf("initialize answered %s", line)
		}
	case <-time.After(mcpGuard):
		cmd.Process.Kill()
		t.Fatalf("initialize not answered\nstderr:\n%s", stderr.String())
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":10}}}`)
	for _, batch := range []string{
		`[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]`,
		`[{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}]`,
	} {
		fmt.Fprintln(stdin, batch)
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":6,"method":"ping"}`)
	stdin.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v, want 0\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(mcpGuard):
		cmd.Process.Kill()
		t.Fatal("toolctl mcp stdio did not exit after stdin closed")
	}
	var got []string
	refused := 0
	for line := range lines {
		got = append(got, line)
		if strings.Contains(line, `"id":null,"error":{"code":-32600`) && strings.Contains(line, "batch") {
			refused++
		}
		if strings.Contains(line, `"id":4`) || strings.Contains(line, `"id":5`) {
			t.Errorf("a batch under 2025-06-18 was answered: %s", line)
		}
	}
	out := strings.Join(got, "\n")
	if refused != 2 {
		t.Errorf("%d batches refused with -32600 naming batches, want 2\nstdout:\n%s", refused, out)
	}
	for _, want := range []string{`"id":2,"result"`, `"id":6,"result"`} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %s\nstdout:\n%s\nstderr:\n%s", want, out, stderr.String())
		}
	}
	if strings.Contains(out, `"interrupted"`) {
		t.Errorf("a call was interrupted:\n%s", out)
	}
}

// TestMCPStdioCancelledAtEOF: a request the client cancelled before
// closing stdin gets no answer (MCP's cancellation says none is sent), so
// the end of input does not wait for one.
func TestMCPStdioCancelledAtEOF(t *testing.T) {
	url := startMCPFleet(t)
	// The steps take 100 s; the drain would wait 10 min, far past the
	// test's wait: only not waiting for the cancelled request ends it.
	stdout, _, _, exited := stdioAtEOFWith(t, url, []string{"--drain", "10m"}, mcpGuard,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":5000}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"changed my mind"}}`)
	if !exited {
		t.Fatalf("toolctl mcp stdio still waits for a cancelled request\nstdout:\n%s", stdout)
	}
}

// stdioAtEOF runs toolctl mcp stdio with an initialization and lines as
// its whole stdin, and waits up to wait for it to exit; when it does not
// (exited false) it is killed.
func stdioAtEOF(t *testing.T, url string, wait time.Duration, lines ...string) (stdout, stderr string, err error, exited bool) {
	t.Helper()
	return stdioAtEOFWith(t, url, nil, wait, lines...)
}

// stdioAtEOFWith is stdioAtEOF with flags given to mcp stdio.
func stdioAtEOFWith(t *testing.T, url string, flags []string, wait time.Duration, lines ...string) (stdout, stderr string, err error, exited bool) {
	t.Helper()
	return stdioAtEOFVersion(t, url, "2025-06-18", flags, wait, lines...)
}

// stdioAtEOFVersion is stdioAtEOFWith with the protocol version the
// initialization asks for.
func stdioAtEOFVersion(t *testing.T, url, version string, flags []string, wait time.Duration, lines ...string) (stdout, stderr string, err error, exited bool) {
	t.Helper()
	in := strings.Join(append([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + version + `","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}, lines...), "\n") + "\n"
	cmd := exec.Command(toolctlBinary(t), append([]string{"mcp", "stdio"}, flags...)...)
	cmd.Env = mcpEnv(t, url)
	cmd.Stdin = strings.NewReader(in)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
		return so.String(), se.String(), err, true
	case <-time.After(wait):
		cmd.Process.Kill()
		<-done
		return so.String(), se.String(), nil, false
	}
}

func TestMCPServe(t *testing.T) {
	bin := toolctlBinary(t)
	url := startMCPFleet(t)
	env := mcpEnv(t, url)
	cmd := exec.Command(bin, "mcp", "serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--max-sessions", "2")
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	endpoint, opsAddr := make(chan string, 1), make(chan string, 1)
	var logMu sync.Mutex
	var logged strings.Builder
	go func() {
		re, ops := regexp.MustCompile(`url=(http://\S+/mcp)`), regexp.MustCompile(`msg="operator endpoint" http=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			logMu.Lock()
			logged.WriteString(sc.Text() + "\n")
			logMu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				endpoint <- m[1]
			}
			if m := ops.FindStringSubmatch(sc.Text()); m != nil {
				opsAddr <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	var u, ops string
	for u == "" || ops == "" {
		select {
		case u = <-endpoint:
		case ops = <-opsAddr:
		case err := <-exited:
			t.Fatalf("toolctl mcp serve exited: %v", err)
		case <-time.After(mcpGuard):
			t.Fatal("toolctl mcp serve never said where it listens")
		}
	}

	cs, progress := connectMCP(t, &sdk.StreamableClientTransport{Endpoint: u})
	exercise(t, cs, progress)
	if res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool"}); err != nil || !res.IsError {
		t.Fatalf("unknown tool: %+v %v", res, err)
	}
	t.Run("operator endpoint", func(t *testing.T) {
		get := func(path string) (int, string) {
			resp, err := http.Get("http://" + ops + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if code, body := get("/readyz"); code != 200 || body != "ready\n" {
			t.Errorf("/readyz: %d %q", code, body)
		}
		_, metrics := get("/metrics")
		for _, want := range []string{
			`toolbus_gateway_calls_total{code="",state="success",tool="echo"} 1`,
			`toolbus_gateway_calls_total{code="not_found",state="error",tool="<unknown>"} 1`,
			`toolbus_gateway_call_duration_seconds_count{tool="echo"} 1`,
			`toolbus_gateway_sessions 1`,
			`toolbus_nats_connected 1`,
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		if path, err := exec.LookPath("promtool"); err == nil {
			check := exec.Command(path, "check", "metrics")
			check.Stdin = strings.NewReader(metrics)
			if out, err := check.CombinedOutput(); err != nil {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		} else if os.Getenv("CI") == "true" {
			t.Error("promtool is not installed (./scripts/test unpacks it into .testdeps/bin)")
		}
		logMu.Lock()
		defer logMu.Unlock()
		for _, want := range []string{`msg="mcp: gateway: session opened"`, `msg="mcp: gateway: tool call" tool=echo`, `code=not_found`} {
			if !strings.Contains(logged.String(), want) {
				t.Errorf("the gateway's log lacks %q", want)
			}
		}
	})
	t.Run("max sessions", func(t *testing.T) {
		// With cs open, at most one more session opens before the
		// gateway answers 503 (a session just closed may still count for
		// a moment).
		ctx, cancel := context.WithTimeout(context.Background(), mcpGuard)
		defer cancel()
		client := sdk.NewClient(&sdk.Implementation{Name: "toolctl-test", Version: "1"}, nil)
		var opened []*sdk.ClientSession
		defer func() {
			for _, s := range opened {
				s.Close() // room for the inspector's
			}
		}()
		for range 3 {
			s, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: u}, nil)
			if err == nil {
				opened = append(opened, s)
				continue
			}
			if !strings.Contains(err.Error(), "Service Unavailable") && !strings.Contains(err.Error(), "503") {
				t.Fatalf("a session past --max-sessions 2: %v, want the 503 of a full gateway", err)
			}
			break
		}
		if len(opened) > 1 {
			t.Errorf("%d sessions opened beside one open already, past --max-sessions 2", len(opened))
		}
	})
	t.Run("inspector", func(t *testing.T) {
		inspectorEcho(t, env, u)
	})

	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(mcpGuard):
		t.Fatal("toolctl mcp serve did not stop on SIGTERM")
	}
}

func TestMCPUsage(t *testing.T) {
	bin := toolctlBinary(t)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		// The usage lines name every subcommand, login and logout too,
		// and an unknown one is called that, not "unexpected arguments".
		{"no mode", []string{"mcp"}, 2, "mcp takes a subcommand: serve, stdio, login SERVER or logout SERVER"},
		{"unknown mode", []string{"mcp", "http"}, 2, `unknown mcp subcommand "http": want serve, stdio, login SERVER or logout SERVER`},
		{"two modes", []string{"mcp", "serve", "stdio"}, 2, `mcp serve takes no arguments, got ["stdio"]`},
		{"negative call timeout", []string{"mcp", "serve", "--call-timeout", "-1s"}, 2, "--call-timeout"},
		{"negative stream poll", []string{"mcp", "serve", "--stream-poll", "-1s"}, 2, "--stream-poll"},
		{"negative drain", []string{"mcp", "stdio", "--drain", "-1s"}, 2, "--drain must not be negative"},
		{"negative grace", []string{"mcp", "serve", "--grace", "-1s"}, 2, "--grace must not be negative"},
		{"zero session timeout", []string{"mcp", "serve", "--session-timeout", "0"}, 2, "--session-timeout"},
		{"unknown flag", []string{"mcp", "serve", "--bogus"}, 2, "bogus"},
		{"max conns not a number", []string{"mcp", "serve", "--max-conns", "x"}, 2, "want a whole number"},
		{"no NATS", []string{"--nats", "nats://127.0.0.1:1", "mcp", "stdio"}, 5, "cannot connect to NATS"},
		// An empty --listen is every interface on a port the system picks:
		// it was served there without --tokens, past the refusal below.
		{"empty listen", []string{"--nats", "nats://127.0.0.1:1", "mcp", "serve", "--listen", ""}, 2, `--listen ""`},
		{"listen without port", []string{"--nats", "nats://127.0.0.1:1", "mcp", "serve", "--listen", "bogus"}, 2, `--listen "bogus"`},
		{"every interface without tokens", []string{"--nats", "nats://127.0.0.1:1", "mcp", "serve", "--listen", ":0"}, 2, "without --tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Env = mcpEnv(t, "")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}

// On SIGTERM `toolctl mcp stdio` ends its calls in flight interrupted and
// writes their results before it exits: the go-sdk refuses to write once
// the session is closing, and the result was lost (the call even ran on
// to its end on the worker).
func TestMCPStdioSIGTERMAnswersCalls(t *testing.T) {
	url := startMCPFleet(t)
	cmd := exec.Command(toolctlBinary(t), "mcp", "stdio")
	cmd.Env = mcpEnv(t, url)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	var so, se strings.Builder
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = lockedWriter{&mu, &so}, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n"+
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"steps","arguments":{"n":5000}}}`+"\n")
	deadline := time.Now().Add(mcpGuard)
	for {
		mu.Lock()
		ready := strings.Contains(so.String(), `"id":1`)
		mu.Unlock()
		if ready || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // the call runs on the worker
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit: %v, want 0\n%s", err, se.String())
		}
	case <-time.After(mcpGuard):
		t.Fatal("toolctl mcp stdio did not stop on SIGTERM")
	}
	mu.Lock()
	out := so.String()
	mu.Unlock()
	var answered bool
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `"id":2`) {
			answered = strings.Contains(line, "interrupted") && strings.Contains(line, `"isError":true`)
		}
	}
	if !answered {
		t.Fatalf("the call in flight got no interrupted result:\n%s", out)
	}
}

// lockedWriter serialises writes to w with mu.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
