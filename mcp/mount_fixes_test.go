package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// mountTestServerEnv selects one of this file's stdio servers in the
// re-executed test binary (init runs before TestMain).
const mountTestServerEnv = "TOOLBUS_MCP_TEST_SERVER"

func init() {
	switch os.Getenv(mountTestServerEnv) {
	case "wedge":
		os.Exit(wedgeServerMain())
	case "flood":
		os.Exit(floodServerMain())
	case "stdout-garbage":
		os.Exit(garbageServerMain())
	}
}

// wedgedReader is the server's stdin; once wedged it never returns from
// Read again, as a server whose event loop is stuck in a synchronous
// task (a node server, a Python server doing CPU work) stops reading.
type wedgedReader struct {
	r      io.Reader
	wedged atomic.Bool
}

func (w *wedgedReader) Read(p []byte) (int, error) {
	if w.wedged.Load() {
		select {} // stuck for good
	}
	return w.r.Read(p)
}

// wedgeServerMain is a go-sdk stdio server with echo and "wedge": after a
// wedge call it stops reading its stdin but stays alive.
func wedgeServerMain() int {
	in := &wedgedReader{r: os.Stdin}
	srv := sdk.NewServer(&sdk.Implementation{Name: "wedge", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo text."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "wedge", Description: "Stop reading stdin."},
		func(ctx context.Context, req *sdk.CallToolRequest, _ args) (*sdk.CallToolResult, any, error) {
			in.wedged.Store(true)
			return textResult("wedged"), nil, nil
		})
	_ = srv.Run(context.Background(), &sdk.IOTransport{Reader: io.NopCloser(in), Writer: os.Stdout})
	select {} // like server-everything: stdin EOF does not end it
}

func wedgeStdio(t testing.TB, name string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Name: name, Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: "wedge"}}
}

// A stdio server that stops reading its stdin (alive, but its event loop
// is stuck) must not make calls hang: `timeout: 2s` bounds each call, and
// the caller's cancel ends it, and Close returns. A call whose request is
// larger than the pipe's buffer blocks in the go-sdk's Write, which
// ignores the context: the server is killed to end it (the call used to
// wait for the caller's whole deadline, and Close never returned).
func TestWedgedStdioServerTimesOut(t *testing.T) {
	s := natstest.Embedded(t, false)
	cfg := wedgeStdio(t, "wedge")
	cfg.Timeout = Duration(2 * time.Second)
	tk, c := mount(t, cfg)
	w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(natstest.Ctx(t)) })
	bc, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if r := bc.Invoke(ctx, toolkit.ToolCall{ID: "w", Name: "mcp__wedge__wedge", Input: map[string]any{}}); r.Text() != "wedged" {
		t.Fatalf("wedge: %+v", r)
	}
	// The server now reads nothing. A call with a large argument (a file's
	// content, say): its configured timeout is 2s. The caller sets no
	// deadline: only the call's timeout can end it.
	callCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	answered := make(chan *toolkit.Response, 1)
	go func() {
		answered <- bc.Invoke(callCtx, toolkit.ToolCall{ID: "big", Name: "mcp__wedge__echo", Input: map[string]any{"text": strings.Repeat("x", 256<<10)}})
	}()
	select {
	case r := <-answered:
		t.Logf("after %v: state=%s code=%s text=%.200q", time.Since(start).Round(time.Millisecond), r.State, r.Code, r.Text())
		if r.Code != toolkit.CodeTimeout {
			t.Errorf("a call to a wedged server with timeout 2s ended %s/%s, want timeout", r.State, r.Code)
		}
	case <-time.After(guardTimeout):
		t.Errorf("a call to a wedged server with timeout 2s has not ended %v later", guardTimeout)
		cancel()
		<-answered
	}
	// Closing the client (the worker stopping) must not hang either.
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Logf("Close: %v", err)
		}
	case <-time.After(guardTimeout):
		t.Errorf("Client.Close has not returned %v after it was called with a wedged server", guardTimeout)
	}
}

// descendants returns the pids of every live (not zombie) process below
// pid, read from /proc.
func descendants(t *testing.T, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	parent := map[int]int{}
	for _, e := range entries {
		var p int
		if _, err := fmt.Sscan(e.Name(), &p); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		rest := s[strings.LastIndexByte(s, ')')+2:] // "S ppid ..."
		var state string
		var ppid int
		if _, err := fmt.Sscan(rest, &state, &ppid); err != nil || state == "Z" {
			continue
		}
		parent[p] = ppid
	}
	var out []int
	var walk func(int)
	walk = func(pp int) {
		for p, q := range parent {
			if q == pp {
				out = append(out, p)
				walk(p)
			}
		}
	}
	walk(pid)
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z")
}

// A stdio server started through a wrapper script (as servers that set up
// a virtualenv or an environment file first are) is a grandchild of the
// worker. Closing the client (the worker stopping, a stateless call
// ending, a reconnect) ends the whole process group: the transport's
// signals reach only the direct child, bash, and a server that does not
// exit on stdin EOF (server-everything does not) was left running,
// re-parented to init. (npx passes either way: npm forwards SIGTERM.)
func TestWrappedStdioServerEndsOnClose(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "run-server.sh")
	body := "#!/bin/bash\nset -e\ncd \"$(dirname \"$0\")\"\nexport " + mountTestServerEnv + "=wedge\n" + exe + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	tk, c := mount(t, ServerConfig{Name: "wrapped", Transport: TransportStdio, Command: script})
	if r := run(t, testCtx(t), tk, "mcp__wrapped__echo", map[string]any{"text": "hi"}); r.final.Text() != "hi" {
		t.Fatalf("echo: %+v", r.final)
	}
	top := c.current().cmd.Process.Pid
	below := descendants(t, top)
	t.Logf("bash pid %d, its descendants %v", top, below)
	t.Cleanup(func() {
		for _, p := range below {
			_ = ostest.Kill(p, syscall.SIGKILL)
		}
	})
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	t.Logf("Close took %v", time.Since(start).Round(time.Millisecond))
	time.Sleep(3 * time.Second)
	var left []string
	for _, p := range append([]int{top}, below...) {
		if alive(p) {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
			left = append(left, fmt.Sprintf("%d %s", p, strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	if len(left) > 0 {
		t.Errorf("3s after Client.Close these server processes still run:\n%s", strings.Join(left, "\n"))
	}
}

// A server whose tool list changes while the worker is still taking its
// first listing (a server that finishes loading its tools just after it
// starts) announces notifications/tools/list_changed; the worker must end
// up with the new list (refreshLoop dropped the notification while the
// first Register had not synced yet: the tool never appeared).
func TestListChangedDuringFirstListing(t *testing.T) {
	srv := newTestServer(nil)
	var once sync.Once
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				once.Do(func() {
					// Loading finished: one more tool. The go-sdk announces it
					// 10ms later, while this listing is still on its way.
					sdk.AddTool(srv, &sdk.Tool{Name: "loaded", Description: "Loaded late."},
						func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
							return textResult("loaded"), nil, nil
						})
					time.Sleep(200 * time.Millisecond)
				})
			}
			return res, err
		}
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)

	tk := toolkit.New(nil)
	c := newTestClient(t, ServerConfig{Name: "late", Transport: TransportStreamableHTTP, URL: hs.URL})
	if err := c.Start(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := tk.Get("mcp__late__loaded"); ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("5s after the server announced tools/list_changed, mcp__late__loaded is not registered; tools: %v", c.Tools())
	// The server really lists it: a fresh listing has it.
	tools, err := c.ListTools(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if tl.Name == "loaded" {
			t.Logf("the server does list %q", tl.Name)
		}
	}
}

// TestEndlessToolPages: a hostile (or buggy) server that always answers
// tools/list with a new cursor is refused past MaxListedTools (the
// listing kept every page until the connect timeout, then started over).
func TestEndlessToolPages(t *testing.T) {
	srv := newTestServer(nil)
	var served atomic.Int64
	desc := strings.Repeat("d", 256)
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			res := &sdk.ListToolsResult{NextCursor: fmt.Sprint("page-", served.Load())} // never the same twice
			for i := 0; i < 500; i++ {
				n := served.Add(1)
				res.Tools = append(res.Tools, &sdk.Tool{Name: fmt.Sprintf("t%d", n), Description: desc, InputSchema: map[string]any{"type": "object"}})
			}
			return res, nil
		}
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	c := newTestClient(t, ServerConfig{Name: "endless", Transport: TransportStreamableHTTP, URL: hs.URL, ConnectTimeout: Duration(2 * time.Minute)})

	var base runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	start := time.Now()
	_, err := c.ListTools(testCtx(t))
	close(stop)
	<-sampled
	growth := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("ListTools after %v: err=%v; tools served %d; peak heap growth %d MB", time.Since(start).Round(time.Millisecond), err, served.Load(), growth>>20)
	if err == nil || !strings.Contains(err.Error(), "more than") || served.Load() > 2*MaxListedTools || growth > 256<<20 {
		t.Errorf("one listing took %d tools (%d MB of heap) from a server that never stops paging, err %v; want it refused past %d tools", served.Load(), growth>>20, err, MaxListedTools)
	}
}

// floodServerMain is a go-sdk stdio server whose "flood" tool sends n
// progress notifications as fast as it can, then creates the file named
// by its text and returns.
func floodServerMain() int {
	srv := sdk.NewServer(&sdk.Implementation{Name: "flood", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "flood", Description: "Flood progress."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= in.N; i++ {
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(i), Total: float64(in.N), Message: "working"}); err != nil {
					return nil, nil, err
				}
			}
			if err := os.WriteFile(in.Text, nil, 0o600); err != nil {
				return nil, nil, err
			}
			return textResult("flooded"), nil, nil
		})
	_ = srv.Run(context.Background(), &sdk.StdioTransport{})
	return 0
}

// A server that sends progress notifications faster than the caller
// takes them must not grow the call's queue without bound: while the
// caller is held, a newer report replaces the last queued one, and the
// caller is told how many were dropped. All 30,000 used to be queued.
func TestProgressFloodBounded(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := mount(t, ServerConfig{Name: "flood", Transport: TransportStdio, Command: exe, Env: map[string]string{mountTestServerEnv: "flood"}})
	const n = 30_000
	marker := filepath.Join(t.TempDir(), "sent")
	var got []toolkit.Progress
	var logs []toolkit.LogMessage
	out := struct {
		toolkit.WriterFuncs
		logFunc
	}{toolkit.WriterFuncs{Prog: func(p toolkit.Progress) error {
		if len(got) == 0 {
			// Held until the server has sent everything.
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(marker); err == nil {
					break
				}
			}
		}
		got = append(got, p)
		return nil
	}}, func(m toolkit.LogMessage) error { logs = append(logs, m); return nil }}
	r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "f", Name: "mcp__flood__flood", Input: map[string]any{"n": n, "text": marker}}, out)
	if r.Text() != "flooded" {
		t.Fatalf("final: %+v", r)
	}
	t.Logf("%d progress reports delivered of %d, logs %v", len(got), n, logs)
	// The batch taken when the caller was first held, then one queue.
	if len(got) > 2*sinkMaxItems+1 {
		t.Errorf("%d progress reports were queued for a held caller, want at most %d", len(got), 2*sinkMaxItems+1)
	}
	if last := got[len(got)-1]; last.Progress != n {
		t.Errorf("the last progress delivered is %v, want the server's last (%d)", last.Progress, n)
	}
	if len(logs) != 1 || logs[0].Level != "warning" || !strings.Contains(fmt.Sprint(logs[0].Data), "were dropped") {
		t.Errorf("logs %+v, want one warning that reports were dropped", logs)
	}
}

// logFunc adapts a function to toolkit.LogWriter.
type logFunc func(toolkit.LogMessage) error

func (f logFunc) Log(m toolkit.LogMessage) error { return f(m) }

// A Streamable HTTP server that answers a call with an endless JSON body
// fails that call once the body passes MaxMessageBytes; the go-sdk used to
// read the whole body into memory first.
func TestHugeJSONAnswerRefused(t *testing.T) {
	const total = 256 << 20
	var written atomic.Int64
	u := callAnswerServer(t, func(w http.ResponseWriter, id json.RawMessage, _ string) {
		w.Header().Set("Content-Type", "application/json")
		writeHugeText(w, id, total, &written)
	})
	tk, _ := mount(t, ServerConfig{Name: "huge", Transport: TransportStreamableHTTP, URL: u})
	r := tk.Dispatch(testCtx(t), toolkit.ToolCall{ID: "h", Name: "mcp__huge__echo", Input: map[string]any{"text": "x"}}, toolkit.WriterFuncs{})
	t.Logf("final %s/%s %.200q; the server wrote %d MiB", r.State, r.Code, r.Text(), written.Load()>>20)
	if r.State != toolkit.StateError || !strings.Contains(r.Text(), "MaxMessageBytes") {
		t.Errorf("a call answered with %d MiB of JSON ended %s/%s %.200q, want an error naming MaxMessageBytes", written.Load()>>20, r.State, r.Code, r.Text())
	}
	if written.Load() >= total {
		t.Errorf("the whole %d MiB answer was read", total>>20)
	}
}

// An event-stream event of many short data lines is not a notification:
// the tap keeps none of it (it kept every line), and reads the next.
func TestTapManyLineEvent(t *testing.T) {
	var r progressRouter
	sink := r.open("c1")
	tap := newSSETap(io.NopCloser(strings.NewReader("")), &r, "c1")
	tap.feed(bytes.Repeat([]byte("data: x\n"), 200_000))
	if len(tap.data) > maxTapLine/2 {
		t.Errorf("the tap holds %d lines of one event", len(tap.data))
	}
	tap.feed([]byte("\n"))
	tap.feed([]byte(`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c1","progress":1}}` + "\n\n"))
	if items := sink.take(); len(items) != 1 || items[0].progress.Progress != 1 {
		t.Errorf("after the long event, items %+v, want the progress notification", items)
	}
}
