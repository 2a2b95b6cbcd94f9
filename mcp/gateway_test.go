package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// The gateway tests run a real embedded nats-server (on a loopback port,
// so a gateway in a child process reaches it), a real worker (bus.Serve
// plus an Announcer, group state in the server's JetStream KV), and the
// gateway over real HTTP or as a real stdio child process: the test binary
// re-executed with testServerEnv=gateway (see TestMain).

const (
	gatewayNATSEnv    = "TOOLBUS_GATEWAY_TEST_NATS"
	gatewaySessionEnv = "TOOLBUS_GATEWAY_TEST_SESSION"
)

// gatewayStdioMain is the child process: a gateway on stdio.
func gatewayStdioMain() int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	nc, err := nats.Connect(os.Getenv(gatewayNATSEnv))
	if err != nil {
		log.Error("gateway child: connect", "err", err)
		return 1
	}
	defer nc.Close()
	ctx := context.Background()
	g, err := NewGateway(ctx, nc, &GatewayOptions{Logger: log})
	if err != nil {
		log.Error("gateway child", "err", err)
		return 1
	}
	defer g.Close()
	if err := g.ServeStdio(ctx, os.Getenv(gatewaySessionEnv)); err != nil {
		log.Error("gateway child: serve", "err", err)
		return 1
	}
	return 0
}

// guardTimeout only keeps a broken gateway from hanging the run.
const guardTimeout = 30 * time.Second

type fleetFixture struct {
	srv       *embedded.Server
	url       string
	started   chan struct{} // "slow" is running
	cancelled chan error    // what "slow" saw when its ctx ended
	mu        sync.Mutex
	cause     error // why "slow"'s ctx ended last (context.Cause)
}

// lastCause is why "slow"'s ctx ended last.
func (f *fleetFixture) lastCause() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cause
}

type textIn struct {
	Text string `json:"text"`
}

type stepsIn struct {
	N int `json:"n"`
}

// startFleet starts NATS and one worker serving echo, steps (progress),
// slow (blocks until cancelled) and, in the inactive group "extra", shout.
func startFleet(t testing.TB) *fleetFixture {
	t.Helper()
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	f := &fleetFixture{srv: srv, url: srv.ClientURL(), started: make(chan struct{}, 8), cancelled: make(chan error, 8)}

	tk := newWorkerToolkit(t, srv)
	if err := tk.AddGroup(toolkit.Group{Name: "extra", Description: "Extra tools."}); err != nil {
		t.Fatal(err)
	}
	tools := []*toolkit.Tool{
		toolkit.Func("echo", "Echo the text back.", func(ctx context.Context, in textIn) (string, error) { return in.Text, nil }),
		toolkit.Stream("steps", "Report n progress steps, then answer done.", func(ctx context.Context, in stepsIn, w toolkit.Writer) error {
			for i := 1; i <= in.N; i++ {
				if err := w.Progress(toolkit.Progress{Progress: float64(i), Total: float64(in.N), Message: fmt.Sprintf("step %d", i)}); err != nil {
					return err
				}
				// Long enough that the call outlives the worker's flush
				// window, so its progress is sent rather than folded.
				time.Sleep(20 * time.Millisecond)
			}
			return w.Write(toolkit.Text("done"))
		}),
		toolkit.Func("slow", "Block until cancelled.", func(ctx context.Context, in struct{}) (string, error) {
			f.started <- struct{}{}
			<-ctx.Done()
			f.mu.Lock()
			f.cause = context.Cause(ctx)
			f.mu.Unlock()
			f.cancelled <- ctx.Err()
			return "", ctx.Err()
		}),
		toolkit.Func("shout", "Upper-case the text.", func(ctx context.Context, in textIn) (string, error) {
			return strings.ToUpper(in.Text), nil
		}),
		toolkit.Raw("picture", "Return an image, a document and a link.", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				c := toolkit.Data("image/png", pngBytes)
				c.Content = append(c.Content,
					toolkit.Block{Type: toolkit.BlockData, MediaType: "application/pdf", Data: "JVBERi0=", Name: "file:///tmp/a.pdf"},
					toolkit.Block{Type: toolkit.BlockData, URL: "https://example.com/x.txt", MediaType: "text/plain"})
				c.Metadata = map[string]any{"structured_content": map[string]any{"n": 1}, "note": "kept"}
				return w.Write(c)
			}),
	}
	opts := map[int][]toolkit.Option{0: {toolkit.ReadOnly()}, 3: {toolkit.InGroup("extra")}}
	for i, tool := range tools {
		if err := tk.Add(tool, opts[i]...); err != nil {
			t.Fatal(err)
		}
	}
	serveWorker(t, srv, tk, "w1")
	return f
}

func newWorkerToolkit(t testing.TB, srv *embedded.Server) *toolkit.Toolkit {
	t.Helper()
	return toolkit.New(&toolkit.Options{State: groupState(t, srv)})
}

// groupState is the fleet's group state (the default KV bucket).
func groupState(t testing.TB, srv *embedded.Server) *bus.KVState {
	t.Helper()
	state, err := bus.NewKVState(natstest.Ctx(t), natstest.JS(t, natstest.Connect(t, srv)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// serveWorker serves tk on the bus (bus.Serve announces it); stop (also
// run at cleanup) says goodbye and stops the worker.
func serveWorker(t testing.TB, srv *embedded.Server, tk *toolkit.Toolkit, instance string) (stop func()) {
	t.Helper()
	nc := natstest.Connect(t, srv)
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: instance})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
			defer cancel()
			w.Stop(ctx)
		})
	}
	t.Cleanup(stop)
	return stop
}

func newGateway(t testing.TB, f *fleetFixture) *Gateway {
	t.Helper()
	return startGateway(t, f.srv, nil)
}

// startGateway starts a gateway with opts on its own connection to srv,
// closed when the test ends.
func startGateway(t testing.TB, srv *embedded.Server, opts *GatewayOptions) *Gateway {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g, err := NewGateway(ctx, natstest.Connect(t, srv), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// serveGatewayHTTP serves g on a loopback port and returns its /mcp URL.
func serveGatewayHTTP(t testing.TB, g *Gateway) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.ServeListener(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + l.Addr().String() + "/mcp"
}

// gatewayCommand is the stdio gateway as a child process.
func gatewayCommand(t testing.TB, f *fleetFixture, session string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), testServerEnv+"=gateway", gatewayNATSEnv+"="+f.url, gatewaySessionEnv+"="+session)
	cmd.Stderr = os.Stderr
	return cmd
}

// mcpClient is a go-sdk client session plus what the server pushed.
type mcpClient struct {
	cs       *sdk.ClientSession
	progress chan *sdk.ProgressNotificationParams
	changed  chan struct{}
}

func connectClient(t testing.TB, transport sdk.Transport) *mcpClient {
	t.Helper()
	c := &mcpClient{progress: make(chan *sdk.ProgressNotificationParams, 64), changed: make(chan struct{}, 64)}
	client := sdk.NewClient(&sdk.Implementation{Name: "gateway-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			c.progress <- req.Params
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { c.changed <- struct{}{} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// gatewayTransport reaches a new gateway on f over HTTP or stdio.
func gatewayTransport(t testing.TB, f *fleetFixture, kind string) sdk.Transport {
	t.Helper()
	switch kind {
	case "http":
		return &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, newGateway(t, f))}
	case "stdio":
		session := "stdio-" + strings.ReplaceAll(t.Name(), "/", "-")
		return &sdk.CommandTransport{Command: gatewayCommand(t, f, session), TerminateDuration: 2 * time.Second}
	}
	t.Fatalf("unknown transport %q", kind)
	return nil
}

func listNames(t *testing.T, c *mcpClient) map[string]*sdk.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	out := map[string]*sdk.Tool{}
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

func callTool(t *testing.T, ctx context.Context, c *mcpClient, name string, args map[string]any, token any) *sdk.CallToolResult {
	t.Helper()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := c.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
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

func waitChanged(t *testing.T, c *mcpClient, what string) {
	t.Helper()
	select {
	case <-c.changed:
	case <-time.After(guardTimeout):
		t.Fatalf("no notifications/tools/list_changed %s", what)
	}
}

func drain[T any](ch chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestGateway drives the gateway with a go-sdk client over Streamable
// HTTP and over stdio (a child process): list, call, progress, cancel,
// list changes after reset_tools and after a new worker joins.
func TestGateway(t *testing.T) {
	for _, kind := range []string{"http", "stdio"} {
		t.Run(kind, func(t *testing.T) {
			f := startFleet(t)
			c := connectClient(t, gatewayTransport(t, f, kind))
			ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
			defer cancel()

			tools := listNames(t, c)
			if got, want := sortedKeys(tools), []string{"echo", "picture", "reset_tools", "slow", "steps"}; !slices.Equal(got, want) {
				t.Fatalf("tools = %v, want %v (shout's group is inactive)", got, want)
			}
			if a := tools["echo"].Annotations; a == nil || !a.ReadOnlyHint {
				t.Errorf("echo annotations = %+v, want readOnlyHint", a)
			}
			if a := tools["steps"].Annotations; a == nil || a.ReadOnlyHint {
				t.Errorf("steps annotations = %+v, want not read-only", a)
			}
			schema, _ := json.Marshal(tools["echo"].InputSchema)
			if !strings.Contains(string(schema), `"text"`) {
				t.Errorf("echo schema = %s, want the text property", schema)
			}

			t.Run("echo", func(t *testing.T) {
				res := callTool(t, ctx, c, "echo", map[string]any{"text": "hello"}, nil)
				if res.IsError || resultText(res) != "hello" {
					t.Fatalf("echo = %+v (%q), want hello", res, resultText(res))
				}
				if res.Meta[GatewayMetaState] != "success" {
					t.Errorf("meta = %v, want state success", res.Meta)
				}
			})

			t.Run("progress", func(t *testing.T) {
				drain(c.progress)
				res := callTool(t, ctx, c, "steps", map[string]any{"n": 3}, "tok-1")
				if res.IsError || resultText(res) != "done" {
					t.Fatalf("steps = %q (error %v)", resultText(res), res.IsError)
				}
				// The go-sdk client runs its progress handler on its own
				// goroutine, so the notifications may land after CallTool.
				for i := 1; i <= 3; i++ {
					select {
					case p := <-c.progress:
						if p.ProgressToken != "tok-1" || p.Progress != float64(i) || p.Total != 3 || p.Message != fmt.Sprintf("step %d", i) {
							t.Errorf("progress %d = %+v", i, p)
						}
					case <-time.After(guardTimeout):
						t.Fatalf("progress %d never arrived", i)
					}
				}
			})

			t.Run("cancel", func(t *testing.T) {
				cctx, ccancel := context.WithCancel(ctx)
				errc := make(chan error, 1)
				go func() {
					_, err := c.cs.CallTool(cctx, &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}})
					errc <- err
				}()
				select {
				case <-f.started:
				case <-time.After(guardTimeout):
					t.Fatal("slow never started")
				}
				ccancel()
				select {
				case err := <-f.cancelled:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("slow saw %v, want context.Canceled", err)
					}
				case <-time.After(guardTimeout):
					t.Fatal("the worker never saw the cancel")
				}
				if err := <-errc; err == nil {
					t.Error("a cancelled CallTool returned no error")
				}
				if res := callTool(t, ctx, c, "echo", map[string]any{"text": "after"}, nil); resultText(res) != "after" {
					t.Errorf("echo after a cancel = %q", resultText(res))
				}
			})

			t.Run("reset_tools", func(t *testing.T) {
				drain(c.changed)
				res := callTool(t, ctx, c, "reset_tools", map[string]any{"extra": true}, nil)
				if res.IsError {
					t.Fatalf("reset_tools: %s", resultText(res))
				}
				waitChanged(t, c, "after reset_tools")
				if _, ok := listNames(t, c)["shout"]; !ok {
					t.Fatal("shout not listed after activating its group")
				}
				if res := callTool(t, ctx, c, "shout", map[string]any{"text": "hi"}, nil); resultText(res) != "HI" {
					t.Errorf("shout = %q", resultText(res))
				}
				drain(c.changed)
				callTool(t, ctx, c, "reset_tools", map[string]any{"extra": false}, nil)
				waitChanged(t, c, "after deactivating")
				if _, ok := listNames(t, c)["shout"]; ok {
					t.Fatal("shout still listed after deactivating its group")
				}
			})

			t.Run("groups set on the bus", func(t *testing.T) {
				session, _ := callTool(t, ctx, c, "echo", map[string]any{"text": "x"}, nil).Meta[GatewayMetaSession].(string)
				if session == "" {
					t.Fatal("no toolbus session in the result's _meta")
				}
				state := groupState(t, f.srv)
				for _, groups := range [][]string{{"extra"}, {}} {
					drain(c.changed)
					if _, err := state.Store(ctx, session, groups); err != nil {
						t.Fatal(err)
					}
					waitChanged(t, c, fmt.Sprintf("after storing %v for the session", groups))
					// A change notified late for the previous store may be
					// the one waited for: wait for the list itself.
					natstest.WaitFor(t, fmt.Sprintf("shout listed = %v with groups %v", len(groups) == 1, groups), func() bool {
						_, ok := listNames(t, c)["shout"]
						return ok == (len(groups) == 1)
					})
				}
			})

			t.Run("new worker", func(t *testing.T) {
				drain(c.changed)
				tk := newWorkerToolkit(t, f.srv)
				if err := tk.Add(toolkit.Func("late", "A tool of a worker that joined later.",
					func(ctx context.Context, in struct{}) (string, error) { return "late", nil })); err != nil {
					t.Fatal(err)
				}
				stop := serveWorker(t, f.srv, tk, "w2")
				waitChanged(t, c, "after a worker joined")
				// On a busy machine the notification seen may be a late one of
				// the step before; the new worker's arrives too, and then the
				// listing has its tool.
				natstest.WaitFor(t, "the new worker's tool in the listing", func() bool {
					_, ok := listNames(t, c)["late"]
					return ok
				})
				if res := callTool(t, ctx, c, "late", nil, nil); resultText(res) != "late" {
					t.Errorf("late = %q", resultText(res))
				}
				drain(c.changed)
				stop()
				waitChanged(t, c, "after a worker left")
				natstest.WaitFor(t, "the stopped worker's tool out of the listing", func() bool {
					_, ok := listNames(t, c)["late"]
					return !ok
				})
			})

			t.Run("bad input", func(t *testing.T) {
				res := callTool(t, ctx, c, "echo", map[string]any{"text": 42}, nil)
				if !res.IsError || res.Meta[GatewayMetaCode] != "invalid_input" {
					t.Errorf("echo with a number = %+v, want an invalid_input error", res)
				}
				// A tool the session does not list still reaches the fleet,
				// which says why: nobody has it, or its group is inactive.
				for name, code := range map[string]string{"nope": "not_found", "shout": "group_inactive"} {
					res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: map[string]any{"text": "x"}})
					if err != nil || !res.IsError || res.Meta[GatewayMetaCode] != code {
						t.Errorf("%s = %+v, %v; want a %s result", name, res, err, code)
					}
				}
				if res := callTool(t, ctx, c, "echo", map[string]any{"text": "still"}, nil); resultText(res) != "still" {
					t.Errorf("echo after bad input = %q", resultText(res))
				}
			})
		})
	}
}

// inspector returns the installed MCP Inspector entry point.
func inspector(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		missingPeer(t, "node")
	}
	p := filepath.Join(repoRoot(t), ".testdeps", "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	if _, err := os.Stat(p); err != nil {
		missingPeer(t, "@modelcontextprotocol/inspector")
	}
	return p
}

// runInspector runs the Inspector CLI (a fresh HOME and catalog, so it
// writes nothing outside the test) and decodes its JSON output.
func runInspector(t *testing.T, args ...string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	home := t.TempDir()
	cmd := exec.CommandContext(ctx, "node", append([]string{inspector(t), "--cli"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "MCP_CATALOG_PATH="+filepath.Join(home, "catalog.json"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %v: %v\nstdout: %s\nstderr: %s", args, err, out, stderr.String())
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("inspector %v: output is not JSON: %v\n%s", args, err, out)
	}
	return v
}

// TestGatewayInspector calls fleet tools through the gateway with the
// official MCP Inspector CLI, over Streamable HTTP and over stdio.
func TestGatewayInspector(t *testing.T) {
	inspector(t)
	f := startFleet(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string][]string{
		"http":  {serveGatewayHTTP(t, newGateway(t, f))},
		"stdio": {exe, "-e", testServerEnv + "=gateway", "-e", gatewayNATSEnv + "=" + f.url},
	}
	for _, kind := range []string{"http", "stdio"} {
		t.Run(kind, func(t *testing.T) {
			list := runInspector(t, append(targets[kind], "--method", "tools/list")...)
			var names []string
			for _, tool := range list["tools"].([]any) {
				names = append(names, tool.(map[string]any)["name"].(string))
			}
			slices.Sort(names)
			if want := []string{"echo", "picture", "reset_tools", "slow", "steps"}; !slices.Equal(names, want) {
				t.Errorf("tools/list = %v, want %v", names, want)
			}
			res := runInspector(t, append(targets[kind], "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=hello")...)
			content, _ := res["content"].([]any)
			if len(content) != 1 || content[0].(map[string]any)["text"] != "hello" || res["isError"] == true {
				t.Errorf("echo = %v", res)
			}
			res = runInspector(t, append(targets[kind], "--method", "tools/call", "--tool-name", "steps", "--tool-arg", "n=2")...)
			if meta, _ := res["_meta"].(map[string]any); meta[GatewayMetaState] != "success" {
				t.Errorf("steps = %v", res)
			}
		})
	}
}

// TestGatewayResults checks how a final response becomes a CallToolResult,
// and that the MCP session id is the toolbus session.
func TestGatewayResults(t *testing.T) {
	f := startFleet(t)
	c := connectClient(t, gatewayTransport(t, f, "http"))
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()

	res := callTool(t, ctx, c, "picture", nil, nil)
	if res.IsError || len(res.Content) != 3 {
		t.Fatalf("picture = %+v", res)
	}
	if img, ok := res.Content[0].(*sdk.ImageContent); !ok || img.MIMEType != "image/png" || string(img.Data) != string(pngBytes) {
		t.Errorf("content[0] = %#v, want the png image", res.Content[0])
	}
	if er, ok := res.Content[1].(*sdk.EmbeddedResource); !ok || er.Resource.URI != "file:///tmp/a.pdf" ||
		er.Resource.MIMEType != "application/pdf" || string(er.Resource.Blob) != "%PDF-" {
		t.Errorf("content[1] = %#v, want the pdf as an embedded blob", res.Content[1])
	}
	if rl, ok := res.Content[2].(*sdk.ResourceLink); !ok || rl.URI != "https://example.com/x.txt" || rl.MIMEType != "text/plain" {
		t.Errorf("content[2] = %#v, want a resource link", res.Content[2])
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["n"] != float64(1) {
		t.Errorf("structuredContent = %v, want {n:1}", res.StructuredContent)
	}
	md, _ := res.Meta[GatewayMetaMetadata].(map[string]any)
	if md["note"] != "kept" || md["worker"] != "w1" || md["structured_content"] != nil {
		t.Errorf("_meta metadata = %v, want note and worker without structured_content", md)
	}
	if res.Meta[GatewayMetaSession] != c.cs.ID() || c.cs.ID() == "" {
		t.Errorf("toolbus session %v, MCP session %q: want the same", res.Meta[GatewayMetaSession], c.cs.ID())
	}

	// Each MCP session has its own group activation.
	other := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, newGateway(t, f))})
	callTool(t, ctx, c, "reset_tools", map[string]any{"extra": true}, nil)
	if _, ok := listNames(t, other)["shout"]; ok {
		t.Error("another session sees shout after this one activated its group")
	}
	if res := callTool(t, ctx, other, "reset_tools", map[string]any{"nope": true}, nil); !res.IsError || res.Meta[GatewayMetaCode] != "invalid_input" {
		t.Errorf("reset_tools with an unknown group = %+v, want invalid_input", res)
	}
}

// TestGatewayStdioSession: a stdio gateway started with a session name
// keeps that session's activation across processes.
func TestGatewayStdioSession(t *testing.T) {
	f := startFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	open := func() *mcpClient {
		return connectClient(t, &sdk.CommandTransport{Command: gatewayCommand(t, f, "agent-7"), TerminateDuration: 2 * time.Second})
	}
	first := open()
	if res := callTool(t, ctx, first, "reset_tools", map[string]any{"extra": true}, nil); res.IsError || res.Meta[GatewayMetaSession] != "agent-7" {
		t.Fatalf("reset_tools = %+v", res)
	}
	first.cs.Close()
	if _, ok := listNames(t, open())["shout"]; !ok {
		t.Error("a new process with the same session does not list shout")
	}
}

// TestGatewaySessionsEnd: a closed HTTP session is forgotten.
func TestGatewaySessionsEnd(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	count := func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.sessions)
	}
	// The session is tracked from its initialize, as the go-sdk serves it.
	for deadline := time.Now().Add(guardTimeout); count() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions tracked, want 1", count())
		}
	}
	c.cs.Close()
	for deadline := time.Now().Add(guardTimeout); count() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still tracked after the client closed", count())
		}
	}
}

func TestNewGatewayBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := NewGateway(ctx, nil, nil); err == nil {
		t.Error("NewGateway(nil conn) gave no error")
	}
	f := startFleet(t)
	tests := []struct {
		name string
		opts GatewayOptions
	}{
		{"negative call timeout", GatewayOptions{CallTimeout: -time.Second}},
		{"bad bucket", GatewayOptions{Client: &bus.ClientOptions{GroupsBucket: "a.b"}}},
		{"negative discover window", GatewayOptions{Client: &bus.ClientOptions{DiscoverWindow: -1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if g, err := NewGateway(ctx, natstest.Connect(t, f.srv), &tt.opts); err == nil {
				g.Close()
				t.Error("no error")
			}
		})
	}
}

func TestCallArguments(t *testing.T) {
	tests := []struct {
		raw     any
		want    map[string]any
		wantErr bool
	}{
		{nil, map[string]any{}, false},
		{json.RawMessage(nil), map[string]any{}, false},
		{json.RawMessage(`null`), map[string]any{}, false},
		{json.RawMessage(`{"a":1}`), map[string]any{"a": float64(1)}, false},
		{json.RawMessage(`{"id":9007199254740993}`), map[string]any{"id": int64(9007199254740993)}, false}, // exact, as the model sent it
		{map[string]any{"b": "x"}, map[string]any{"b": "x"}, false},
		{json.RawMessage(`[1,2]`), nil, true},
		{json.RawMessage(`"text"`), nil, true},
		{json.RawMessage(`{"a":`), nil, true},
		{func() {}, nil, true},
	}
	for i, tt := range tests {
		got, err := callArguments(tt.raw)
		if (err != nil) != tt.wantErr {
			t.Errorf("%d: err = %v, wantErr %v", i, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%d: got %v, want %v", i, got, tt.want)
		}
	}
}

func TestBlockContent(t *testing.T) {
	tests := []struct {
		name  string
		block toolkit.Block
		want  string // the content's JSON
	}{
		{"text", toolkit.Block{Type: toolkit.BlockText, Text: "hi"}, `{"type":"text","text":"hi"}`},
		{"image", toolkit.Block{Type: toolkit.BlockData, MediaType: "image/gif", Data: "R0lG"}, `{"type":"image","mimeType":"image/gif","data":"R0lG"}`},
		{"audio", toolkit.Block{Type: toolkit.BlockData, MediaType: "audio/wav", Data: "UklG"}, `{"type":"audio","mimeType":"audio/wav","data":"UklG"}`},
		{"blob with id", toolkit.Block{Type: toolkit.BlockData, ID: "b1", MediaType: "application/zip", Data: "UEs="},
			`{"type":"resource","resource":{"uri":"toolbus:data/b1","mimeType":"application/zip","blob":"UEs="}}`},
		{"blob without id", toolkit.Block{Type: toolkit.BlockData, Name: "report.bin", Data: "AA=="},
			`{"type":"resource","resource":{"uri":"toolbus:data/call-2","blob":"AA=="}}`},
		{"url", toolkit.Block{Type: toolkit.BlockData, URL: "https://x.test/a", Name: "a"}, `{"type":"resource_link","uri":"https://x.test/a","name":"a"}`},
		{"bad base64", toolkit.Block{Type: toolkit.BlockData, Name: "n", MediaType: "image/png", Data: "%%%"},
			`{"type":"text","text":"[data block \"n\" (image/png) is not valid base64: illegal base64 data at input byte 0]"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(blockContent("call", 2, tt.block))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got  %s\nwant %s", b, tt.want)
			}
		})
	}
}

// BenchmarkGatewayEcho compares an echo call made directly on the bus,
// an echo tool served by the go-sdk alone over HTTP, and the fleet's echo
// through the gateway (go-sdk client over HTTP and over stdio): the
// gateway costs about the sum of the first two.
func BenchmarkGatewayEcho(b *testing.B) {
	f := startFleet(b)
	args := map[string]any{"text": "hi"}
	b.Run("bus", func(b *testing.B) {
		client, err := bus.NewClient(natstest.Connect(b, f.srv), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer client.Close()
		ctx := context.Background()
		for b.Loop() {
			if r := client.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: args, Session: "bench"}); r.Text() != "hi" {
				b.Fatalf("echo = %+v", r)
			}
		}
	})
	b.Run("sdk-http", func(b *testing.B) { // the go-sdk alone: a local echo tool over HTTP, no bus
		srv := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
		sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(ctx context.Context, req *sdk.CallToolRequest, in textIn) (*sdk.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		hs := &http.Server{Handler: sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)}
		go hs.Serve(l)
		defer hs.Close()
		c := connectClient(b, &sdk.StreamableClientTransport{Endpoint: "http://" + l.Addr().String()})
		ctx := context.Background()
		for b.Loop() {
			res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
			if err != nil || resultText(res) != "hi" {
				b.Fatalf("echo = %v, %v", res, err)
			}
		}
	})
	for _, kind := range []string{"http", "stdio"} {
		b.Run("gateway-"+kind, func(b *testing.B) {
			c := connectClient(b, gatewayTransport(b, f, kind))
			ctx := context.Background()
			for b.Loop() {
				res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
				if err != nil || resultText(res) != "hi" {
					b.Fatalf("echo = %v, %v", res, err)
				}
			}
		})
	}
}
