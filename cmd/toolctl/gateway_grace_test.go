package main_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// heldFleet runs NATS on a loopback port and a worker whose tool "hold"
// runs until release is called (answering "finished") or its call is
// cancelled; started says when a call of it runs.
type heldFleet struct {
	url      string
	started  chan struct{}
	release  func()
	canceled chan struct{}
}

func startHeldFleet(t *testing.T) *heldFleet {
	t.Helper()
	srv := natstest.Embedded(t, true)
	nc := natstest.Connect(t, srv)
	state, err := bus.NewKVState(natstest.Ctx(t), natstest.JS(t, nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &heldFleet{url: srv.ClientURL(), started: make(chan struct{}, 16), canceled: make(chan struct{}, 16)}
	released := make(chan struct{})
	var once sync.Once
	f.release = func() { once.Do(func() { close(released) }) }
	t.Cleanup(f.release)
	tk := toolkit.New(&toolkit.Options{State: state})
	for _, tool := range []*toolkit.Tool{
		toolkit.Func("echo", "Echo the text back.", func(ctx context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		}),
		toolkit.Func("hold", "Run until released.", func(ctx context.Context, _ struct{}) (string, error) {
			f.started <- struct{}{}
			select {
			case <-released:
				return "finished", nil
			case <-ctx.Done():
				f.canceled <- struct{}{}
				return "", ctx.Err()
			}
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
	return f
}

// servingGateway is a `toolctl mcp serve --http` process.
type servingGateway struct {
	cmd    *exec.Cmd
	url    string // the MCP endpoint
	ops    string // the operator endpoint's address
	exited chan error
	mu     sync.Mutex
	log    strings.Builder
}

func startServingGateway(t *testing.T, natsURL string, flags ...string) *servingGateway {
	t.Helper()
	args := append([]string{"mcp", "serve", "--listen", "127.0.0.1:0", "--http", fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t))}, flags...)
	g := &servingGateway{cmd: exec.Command(toolctlBinary(t), args...), exited: make(chan error, 1)}
	g.cmd.Env = mcpEnv(t, natsURL)
	stderr, err := g.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if g.cmd.ProcessState == nil {
			g.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("toolctl mcp serve's log:\n%s", g.logged())
		}
	})
	endpoint, ops := make(chan string, 1), make(chan string, 1)
	go func() {
		re, reOps := regexp.MustCompile(`url=(http://\S+/mcp)`), regexp.MustCompile(`msg="operator endpoint" http=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			g.mu.Lock()
			g.log.WriteString(sc.Text() + "\n")
			g.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				endpoint <- m[1]
			}
			if m := reOps.FindStringSubmatch(sc.Text()); m != nil {
				ops <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
		g.exited <- g.cmd.Wait()
	}()
	for g.url == "" || g.ops == "" {
		select {
		case g.url = <-endpoint:
		case g.ops = <-ops:
		case err := <-g.exited:
			t.Fatalf("toolctl mcp serve exited: %v\n%s", err, g.logged())
		case <-time.After(mcpGuard):
			t.Fatal("toolctl mcp serve never said where it listens")
		}
	}
	return g
}

func (g *servingGateway) logged() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.log.String()
}

// exit waits for the process to exit 0.
func (g *servingGateway) exit(t *testing.T) {
	t.Helper()
	select {
	case err := <-g.exited:
		if err != nil {
			t.Errorf("toolctl mcp serve: %v, want exit 0", err)
		}
	case <-time.After(mcpGuard):
		t.Fatal("toolctl mcp serve did not exit")
	}
}

// initialize POSTs an MCP initialize on a connection of its own: nil
// when the gateway answers it.
func initialize(url string) error {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("initialize answered %s", resp.Status)
	}
	return nil
}

type callOutcome struct {
	res *sdk.CallToolResult
	err error
}

func callHold(cs *sdk.ClientSession) chan callOutcome {
	out := make(chan callOutcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*mcpGuard)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "hold", Arguments: map[string]any{}})
		out <- callOutcome{res, err}
	}()
	return out
}

func resultText(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func waitStarted(t *testing.T, f *heldFleet) {
	t.Helper()
	select {
	case <-f.started:
	case <-time.After(mcpGuard):
		t.Fatal("the call of hold never ran")
	}
}

// TestGatewayStopGrace: on SIGTERM `toolctl mcp serve` interrupted its
// calls in flight at once, where a worker lets its running calls finish
// for its grace period (--grace). It now takes no new connection or
// request, lets the calls in flight finish for --grace, and exits once
// they have: a call in flight at SIGTERM completes with its own result.
func TestGatewayStopGrace(t *testing.T) {
	f := startHeldFleet(t)
	g := startServingGateway(t, f.url, "--grace", "10m")
	cs, _ := connectMCP(t, &sdk.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1})
	idle, _ := connectMCP(t, &sdk.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1})
	if err := initialize(g.url); err != nil {
		t.Fatalf("a new session before the stop: %v", err)
	}
	outcome := callHold(cs)
	waitStarted(t, f)

	g.cmd.Process.Signal(syscall.SIGTERM)
	// A new session is refused once the stop has begun.
	natstest.WaitFor(t, "a new initialize to be refused after SIGTERM", func() bool { return initialize(g.url) != nil })
	// And a new request of a session open before it.
	ctx, cancel := context.WithTimeout(context.Background(), mcpGuard)
	defer cancel()
	if res, err := idle.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "late"}}); err == nil {
		t.Errorf("a call sent after SIGTERM was served: %+v", res)
	}
	select {
	case o := <-outcome:
		t.Fatalf("the call in flight ended before it finished, within the grace: %+v %v", o.res, o.err)
	case <-f.canceled:
		t.Fatal("the call in flight was cancelled within the grace")
	default:
	}

	f.release()
	select {
	case o := <-outcome:
		if o.err != nil || o.res.IsError || resultText(o.res) != "finished" {
			t.Errorf("the call in flight at SIGTERM got %+v, %v; want its result, finished", o.res, o.err)
		}
	case <-time.After(mcpGuard):
		t.Fatal("the call in flight got no answer")
	}
	g.exit(t)
	if logs := g.logged(); !strings.Contains(logs, "draining") {
		t.Errorf("the gateway's log does not say it drains:\n%s", logs)
	}
}

// TestGatewayStopGraceOver: a call still running when --grace is over is
// interrupted, its client told the gateway shut down, and the gateway
// exits 0; a second signal interrupts it at once.
func TestGatewayStopGraceOver(t *testing.T) {
	for _, tt := range []struct {
		name   string
		grace  string
		second bool
	}{
		{"grace over", "1s", false},
		{"second signal", "10m", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := startHeldFleet(t)
			g := startServingGateway(t, f.url, "--grace", tt.grace)
			cs, _ := connectMCP(t, &sdk.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1})
			outcome := callHold(cs)
			waitStarted(t, f)
			g.cmd.Process.Signal(syscall.SIGTERM)
			if tt.second {
				natstest.WaitFor(t, "the gateway to drain", func() bool { return strings.Contains(g.logged(), "draining") })
				g.cmd.Process.Signal(syscall.SIGTERM)
			}
			select {
			case o := <-outcome:
				if o.err != nil || !o.res.IsError || resultText(o.res) != mcp.GatewayStoppedText {
					t.Errorf("the call got %+v, %v; want it interrupted, saying the gateway shut down", o.res, o.err)
				}
			case <-time.After(mcpGuard):
				t.Fatal("the call got no answer")
			}
			g.exit(t)
		})
	}
}

// TestGatewayReadyzWhileStopping: once mcp serve began to stop on
// SIGTERM, its /readyz still answered 200 "ready" while it refused new
// connections, so a balancer went on sending it clients. From the moment
// its stop begins, /readyz answers 503 saying it drains, while /healthz
// answers "ok" until it exits.
func TestGatewayReadyzWhileStopping(t *testing.T) {
	f := startHeldFleet(t)
	g := startServingGateway(t, f.url, "--grace", "10m")
	base := "http://" + g.ops
	if code, body := natstest.HTTPGet(base + "/readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz before the stop: %d %q", code, body)
	}
	cs, _ := connectMCP(t, &sdk.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1})
	outcome := callHold(cs)
	waitStarted(t, f)
	g.cmd.Process.Signal(syscall.SIGTERM)
	natstest.WaitFor(t, "a new initialize to be refused after SIGTERM", func() bool { return initialize(g.url) != nil })
	if code, body := natstest.HTTPGet(base + "/readyz"); code != 503 || !strings.Contains(body, "not ready: draining") {
		t.Errorf("/readyz while stopping: %d %q, want 503 saying it drains", code, body)
	}
	if code, body := natstest.HTTPGet(base + "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz while stopping: %d %q", code, body)
	}
	f.release()
	select {
	case o := <-outcome:
		if o.err != nil || o.res.IsError {
			t.Errorf("the call in flight got %+v, %v; want its result", o.res, o.err)
		}
	case <-time.After(mcpGuard):
		t.Fatal("the call in flight got no answer")
	}
	g.exit(t)
}
