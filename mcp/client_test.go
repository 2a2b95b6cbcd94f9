package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// peers returns the go-sdk test server over each transport.
func goPeers(t *testing.T) map[string]func(t *testing.T, name string) ServerConfig {
	return map[string]func(t *testing.T, name string) ServerConfig{
		"stdio": func(t *testing.T, name string) ServerConfig { return testServerStdio(t, name) },
		"streamable-http": func(t *testing.T, name string) ServerConfig {
			return ServerConfig{Name: name, Transport: TransportStreamableHTTP, URL: startHTTPPeer(t, false).url()}
		},
		"sse": func(t *testing.T, name string) ServerConfig {
			return ServerConfig{Name: name, Transport: TransportSSE, URL: startHTTPPeer(t, true).url()}
		},
	}
}

func TestGoPeerRegistration(t *testing.T) {
	for transport, peer := range goPeers(t) {
		t.Run(transport, func(t *testing.T) {
			cfg := peer(t, "go")
			cfg.Group = "gotools"
			tk, c := mount(t, cfg)
			want := []string{"mcp__go__block", "mcp__go__content", "mcp__go__echo", "mcp__go__env", "mcp__go__fail", "mcp__go__headers",
				"mcp__go__late", "mcp__go__log", "mcp__go__ordered", "mcp__go__progress", "mcp__go__schemaxv2"}
			got := c.Tools()
			slices.Sort(got)
			if !slices.Equal(got, want) { // the HTTP peer pages by 3: every page was read
				t.Fatalf("tools = %v, want %v", got, want)
			}
			g := tk.Groups()
			if len(g) != 1 || g[0].Name != "gotools" || g[0].Description == "" {
				t.Fatalf("groups = %+v", g)
			}
			for _, tc := range []struct {
				name     string
				readOnly bool
				idem     toolkit.Idempotency
			}{
				{"mcp__go__echo", true, toolkit.NoSideEffects},
				{"mcp__go__progress", false, toolkit.Idempotent},
				{"mcp__go__late", false, toolkit.IdempotencyUnknown},
			} {
				tl, ok := tk.Get(tc.name)
				if !ok {
					t.Fatalf("%s missing", tc.name)
				}
				if tl.ReadOnly() != tc.readOnly || tl.Idempotency() != tc.idem || tl.ConcurrencySafe() || tl.Group() != "gotools" {
					t.Errorf("%s: readOnly=%v idem=%v concurrencySafe=%v group=%q", tc.name, tl.ReadOnly(), tl.Idempotency(), tl.ConcurrencySafe(), tl.Group())
				}
			}
			if err := c.Register(testCtx(t), toolkit.New(nil)); err == nil {
				t.Fatal("registered in a second toolkit")
			}
			// Titles are stripped, $defs kept, and the schema still resolves.
			s, _ := tk.Get("mcp__go__schemaxv2")
			b := fmt.Sprint(s.InputSchema)
			if strings.Contains(b, "title") || !strings.Contains(b, "$defs") {
				t.Errorf("schema = %v", s.InputSchema)
			}
			// The group is inactive by default: activate it for the session.
			ctx := testCtx(t)
			if _, err := tk.State().Store(ctx, "", []string{"gotools"}); err != nil {
				t.Fatal(err)
			}
			r := run(t, ctx, tk, "mcp__go__schemaxv2", map[string]any{"p": map[string]any{"x": 3}})
			if r.final.State != toolkit.StateSuccess || r.final.Text() != `{"p":{"x":3}}` {
				t.Fatalf("final = %+v", r.final)
			}
			r = run(t, ctx, tk, "mcp__go__schemaxv2", map[string]any{"p": map[string]any{"x": "three"}})
			if r.final.Code != toolkit.CodeInvalidInput {
				t.Fatalf("bad input: final = %+v", r.final)
			}
		})
	}
}

func TestGoPeerResults(t *testing.T) {
	for transport, peer := range goPeers(t) {
		t.Run(transport, func(t *testing.T) {
			tk, c := mount(t, peer(t, "go"))
			ctx := testCtx(t)

			r := run(t, ctx, tk, "mcp__go__content", nil)
			f := r.final
			if f.State != toolkit.StateSuccess || len(f.Content) != 6 {
				t.Fatalf("final = %+v", f)
			}
			want := []toolkit.Block{
				{Type: toolkit.BlockText, Text: "hello"},
				{Type: toolkit.BlockData, MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(pngBytes)},
				{Type: toolkit.BlockData, MediaType: "audio/wav", Data: base64.StdEncoding.EncodeToString([]byte("RIFF....WAVE"))},
				{Type: toolkit.BlockText, Text: "{\n  \"uri\": \"file:///notes.txt\",\n  \"mimeType\": \"text/plain\",\n  \"meta\": null,\n  \"text\": \"note body\"\n}", Name: "file:///notes.txt"},
				{Type: toolkit.BlockData, MediaType: "application/octet-stream", Data: base64.StdEncoding.EncodeToString([]byte{0, 1, 2}), Name: "file:///blob.bin"},
				{Type: toolkit.BlockText, Text: "[resource link] file:///big.csv (name: big.csv; type: text/csv; size: 42 bytes)\n", Name: "file:///big.csv"},
			}
			for i := range want {
				if f.Content[i] != want[i] {
					t.Errorf("block %d = %+v, want %+v", i, f.Content[i], want[i])
				}
			}
			if sc, ok := f.Metadata["structured_content"].(map[string]any); !ok || sc["temperature"] != 21.5 {
				t.Errorf("metadata = %v", f.Metadata)
			}

			r = run(t, ctx, tk, "mcp__go__fail", nil)
			if r.final.State != toolkit.StateError || r.final.Code != toolkit.CodeToolError || r.final.Text() != "disk full" {
				t.Errorf("isError: final = %+v", r.final)
			}

			// A JSON-RPC error (unknown tool) is tool_error with the server's message.
			err := c.Call(ctx, "no-such-tool", nil, toolkit.WriterFuncs{})
			var te *toolkit.Error
			if !errors.As(err, &te) || te.Code != toolkit.CodeToolError || !strings.Contains(te.Message, "no-such-tool") {
				t.Errorf("protocol error = %#v", err)
			}
			// The session survived all of it.
			if r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "still here"}); r.final.Text() != "still here" {
				t.Errorf("echo after errors = %+v", r.final)
			}
		})
	}
}

// Progress arrives in order, complete, and strictly before the final
// response on every call: the wire tap queues it before the SDK sees the
// result.
func TestGoPeerProgressOrder(t *testing.T) {
	for transport, peer := range goPeers(t) {
		t.Run(transport, func(t *testing.T) {
			tk, _ := mount(t, peer(t, "go"))
			ctx := testCtx(t)
			const n = 25
			for i := 0; i < 20; i++ {
				r := run(t, ctx, tk, "mcp__go__progress", map[string]any{"n": n})
				if r.final.State != toolkit.StateSuccess {
					t.Fatalf("final = %+v", r.final)
				}
				if len(r.progress) != n {
					t.Fatalf("call %d: %d progress frames, want %d", i, len(r.progress), n)
				}
				for j, p := range r.progress {
					if p.Progress != float64(j+1) || p.Total != n || p.Message != "step" {
						t.Fatalf("call %d: frame %d = %+v", i, j, p)
					}
				}
			}
		})
	}
}

// recordingWriter fails the test if it is used after the handler returned.
type recordingWriter struct {
	t        *testing.T
	returned atomic.Bool
	mu       sync.Mutex
	progress int
}

func (w *recordingWriter) Write(toolkit.Chunk) error {
	if w.returned.Load() {
		w.t.Error("Write after the call returned")
	}
	return nil
}

func (w *recordingWriter) Progress(toolkit.Progress) error {
	if w.returned.Load() {
		w.t.Error("Progress after the call returned")
	}
	w.mu.Lock()
	w.progress++
	w.mu.Unlock()
	return nil
}

func TestGoPeerLateProgressDropped(t *testing.T) {
	for transport, peer := range goPeers(t) {
		t.Run(transport, func(t *testing.T) {
			tk, c := mount(t, peer(t, "go"))
			ctx := testCtx(t)
			for i := 0; i < 5; i++ {
				w := &recordingWriter{t: t}
				resp := tk.Dispatch(ctx, toolkit.ToolCall{ID: "late", Name: "mcp__go__late", Input: map[string]any{"n": 50}}, w)
				w.returned.Store(true)
				if resp.State != toolkit.StateSuccess || resp.Text() != "answered" {
					t.Fatalf("final = %+v", resp)
				}
				// A round trip after the late notifications were sent.
				if err := c.Call(ctx, "echo", map[string]any{"text": "x"}, toolkit.WriterFuncs{}); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestGoPeerCancelKeepsSession(t *testing.T) {
	for transport, peer := range goPeers(t) {
		t.Run(transport, func(t *testing.T) {
			tk, c := mount(t, peer(t, "go"))
			ctx := testCtx(t)
			before := c.current()
			cctx, cancel := context.WithCancel(ctx)
			var final *toolkit.Response
			for ev := range tk.Call(cctx, toolkit.ToolCall{ID: "b", Name: "mcp__go__block"}) {
				if ev.Progress != nil {
					cancel() // the tool is running on the server: cancel it mid-way
				}
				if ev.Final != nil {
					final = ev.Final
				}
			}
			cancel()
			if final == nil || final.State != toolkit.StateInterrupted || final.Code != toolkit.CodeInterrupted {
				t.Fatalf("final = %+v", final)
			}
			if transport != "stdio" { // the server runs in this process: see the cancel arrive
				select {
				case <-blockCancelled:
				case <-ctx.Done():
					t.Fatal("the server never saw notifications/cancelled")
				}
			}
			if r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "after"}); r.final.Text() != "after" {
				t.Fatalf("echo after cancel = %+v", r.final)
			}
			if after := c.current(); after != before {
				t.Fatal("the cancel replaced the shared session")
			}
		})
	}
}

func TestCallTimeout(t *testing.T) {
	cfg := testServerStdio(t, "go")
	cfg.Timeout = Duration(300 * time.Millisecond)
	tk, _ := mount(t, cfg)
	ctx := testCtx(t)
	r := run(t, ctx, tk, "mcp__go__block", nil)
	if r.final.Code != toolkit.CodeTimeout || !strings.Contains(r.final.Text(), "did not finish") {
		t.Fatalf("final = %+v", r.final)
	}
	if r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "ok"}); r.final.Text() != "ok" {
		t.Fatalf("echo after timeout = %+v", r.final)
	}
}

func TestStatelessGoPeer(t *testing.T) {
	for transport, peer := range goPeers(t) {
		t.Run(transport, func(t *testing.T) {
			cfg := peer(t, "go")
			cfg.Mode = ModeStateless
			tk, c := mount(t, cfg)
			ctx := testCtx(t)
			for i := 0; i < 3; i++ {
				r := run(t, ctx, tk, "mcp__go__progress", map[string]any{"n": 3})
				if r.final.Text() != "done" || len(r.progress) != 3 {
					t.Fatalf("final = %+v progress = %v", r.final, r.progress)
				}
			}
			if c.current() != nil {
				t.Fatal("stateless client kept a session")
			}
		})
	}
}

// Runtime headers reach the server on the next request, on the same
// session; an empty map restores the static headers.
func TestRuntimeHeaders(t *testing.T) {
	p := startHTTPPeer(t, false)
	cfg := ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url(), Headers: map[string]string{"X-Api-Key": "static"}}
	tk, c := mount(t, cfg)
	ctx := testCtx(t)
	echoKey := func() string {
		t.Helper()
		r := run(t, ctx, tk, "mcp__go__headers", nil)
		if r.final.State != toolkit.StateSuccess {
			t.Fatalf("final = %+v", r.final)
		}
		return r.final.Text()
	}
	if k := echoKey(); k != "static" {
		t.Fatalf("key = %q", k)
	}
	session := c.current().cs.ID()
	if session == "" {
		t.Fatal("no session id")
	}
	if err := c.SetRuntimeHeaders(map[string]string{"X-Api-Key": "rotated-1"}); err != nil {
		t.Fatal(err)
	}
	if k := echoKey(); k != "rotated-1" {
		t.Fatalf("key = %q", k)
	}
	if err := c.SetRuntimeHeaders(map[string]string{"X-Api-Key": "rotated-2", "X-Trace": "t"}); err != nil {
		t.Fatal(err)
	}
	if k := echoKey(); k != "rotated-2" {
		t.Fatalf("key = %q", k)
	}
	if err := c.SetRuntimeHeaders(map[string]string{}); err != nil {
		t.Fatal(err)
	}
	if k := echoKey(); k != "static" {
		t.Fatalf("key after reset = %q", k)
	}
	if got := c.current().cs.ID(); got != session {
		t.Fatalf("session changed: %q → %q", session, got)
	}
	// The server saw the keys in order, all on one session.
	var keys []string
	for _, rec := range p.records() {
		if rec.session != "" && rec.session != session {
			t.Fatalf("a POST on another session: %+v", rec)
		}
		if len(keys) == 0 || keys[len(keys)-1] != rec.apiKey {
			keys = append(keys, rec.apiKey)
		}
	}
	if want := []string{"static", "rotated-1", "rotated-2", "static"}; !slices.Equal(keys, want) {
		t.Fatalf("server saw keys %v, want %v", keys, want)
	}

	// Rejected maps change nothing.
	for _, bad := range []map[string]string{
		{"Host": "evil"}, {"content-length": "1"}, {"Connection": "close"}, {"Transfer-Encoding": "chunked"},
		{"Mcp-Session-Id": "x"}, {"Bad Name": "v"}, {"X-Ok": "line\r\nbreak"}, {"": "v"},
	} {
		if err := c.SetRuntimeHeaders(bad); !errors.Is(err, ErrRuntimeHeaders) {
			t.Errorf("SetRuntimeHeaders(%v) = %v, want ErrRuntimeHeaders", bad, err)
		}
	}
	if k := echoKey(); k != "static" {
		t.Fatalf("key after rejected maps = %q", k)
	}
	stdio := newTestClient(t, testServerStdio(t, "s"))
	if err := stdio.SetRuntimeHeaders(map[string]string{"X-Api-Key": "k"}); !errors.Is(err, ErrRuntimeHeaders) {
		t.Fatalf("stdio: %v", err)
	}
}

// An expired HTTP session (the server forgot it: 404) is reopened and the
// call goes through.
func TestExpiredSessionReconnects(t *testing.T) {
	p := startHTTPPeer(t, false)
	tk, c := mount(t, ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url()})
	ctx := testCtx(t)
	old := c.current().cs.ID()
	p.reset()
	r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "again"})
	if r.final.State != toolkit.StateSuccess || r.final.Text() != "again" {
		t.Fatalf("final = %+v", r.final)
	}
	if now := c.current().cs.ID(); now == old || now == "" {
		t.Fatalf("session %q → %q", old, now)
	}
}

// An HTTP server that goes away fails the call with a clear error (no
// hang); once it is back, the next call works.
func TestHTTPServerGoneAndBack(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			p := startHTTPPeer(t, sse)
			tr := TransportStreamableHTTP
			if sse {
				tr = TransportSSE
			}
			cfg := ServerConfig{Name: "go", Transport: tr, URL: p.url(), ConnectTimeout: Duration(5 * time.Second)}
			tk, _ := mount(t, cfg)
			ctx := testCtx(t)
			p.down()
			r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "x"})
			if r.final.State != toolkit.StateError || (r.final.Code != toolkit.CodeUnavailable && r.final.Code != toolkit.CodeToolError) ||
				!strings.Contains(r.final.Text(), `MCP server "go"`) {
				t.Fatalf("final while down = %+v", r.final)
			}
			p.reset()
			p.up()
			r = run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "back"})
			if r.final.Text() != "back" {
				t.Fatalf("final after restart = %+v", r.final)
			}
		})
	}
}

// A stdio server that dies between calls is restarted by the next call;
// one that dies during a call fails that call clearly.
func TestStdioServerRestart(t *testing.T) {
	tk, c := mount(t, testServerStdio(t, "go"))
	ctx := testCtx(t)
	for i := 0; i < 3; i++ {
		s := c.current()
		if !c.Up() {
			t.Fatalf("round %d: Up() = false with a live session", i)
		}
		if err := s.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		for c.Up() { // the session ends when the process does
			select {
			case <-ctx.Done():
				t.Fatal("Up() still true after the server process was killed")
			case <-time.After(10 * time.Millisecond):
			}
		}
		r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "revived"})
		if r.final.Text() != "revived" {
			t.Fatalf("round %d: final = %+v", i, r.final)
		}
		if c.current() == s {
			t.Fatal("still on the dead session")
		}
	}
	// Killed during a call.
	done := make(chan *toolkit.Response, 1)
	var once sync.Once
	go func() {
		var final *toolkit.Response
		for ev := range tk.Call(ctx, toolkit.ToolCall{ID: "b", Name: "mcp__go__block"}) {
			if ev.Progress != nil {
				once.Do(func() { _ = c.current().cmd.Process.Kill() })
			}
			if ev.Final != nil {
				final = ev.Final
			}
		}
		done <- final
	}()
	final := <-done
	if final.State != toolkit.StateError || !strings.Contains(final.Text(), `MCP server "go"`) {
		t.Fatalf("final = %+v", final)
	}
	if r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "again"}); r.final.Text() != "again" {
		t.Fatalf("final = %+v", r.final)
	}
}

// A server that is down at start is skipped (not fatal) and its tools
// appear once it answers.
func TestStartSkipsAndRetries(t *testing.T) {
	p := startHTTPPeer(t, false)
	p.down()
	tk := toolkit.New(nil)
	changed := make(chan struct{}, 16)
	stop := tk.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer stop()
	c := newTestClient(t, ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url(), ConnectTimeout: Duration(2 * time.Second)})
	ctx := testCtx(t)
	if err := c.Start(ctx, tk); err != nil {
		t.Fatalf("Start with the server down = %v, want nil (skipped)", err)
	}
	if len(tk.Tools()) != 0 {
		t.Fatal("tools registered while the server is down")
	}
	if c.Up() {
		t.Fatal("Up() = true while the server is down")
	}
	p.up()
	for {
		if _, ok := tk.Get("mcp__go__echo"); ok {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("tools never appeared")
		}
	}
	if r := run(t, ctx, tk, "mcp__go__echo", map[string]any{"text": "hi"}); r.final.Text() != "hi" {
		t.Fatalf("final = %+v", r.final)
	}
	if !c.Up() {
		t.Fatal("Up() = false once the server answers")
	}
	_ = c.Close()
	if len(tk.Tools()) != 0 {
		t.Fatalf("Close left tools: %v", tk.Tools())
	}
}

// tools/list_changed re-syncs the registration.
func TestListChanged(t *testing.T) {
	p := startHTTPPeer(t, false)
	tk := toolkit.New(nil)
	changed := make(chan struct{}, 16)
	defer tk.OnChange(func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	})()
	c := newTestClient(t, ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url()})
	ctx := testCtx(t)
	if err := c.Register(ctx, tk); err != nil {
		t.Fatal(err)
	}
	p.srv.RemoveTools("late")
	for {
		if _, ok := tk.Get("mcp__go__late"); !ok {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatal("removed tool still registered")
		}
	}
	if _, ok := tk.Get("mcp__go__echo"); !ok {
		t.Fatal("echo lost in the re-sync")
	}
}

// Close ends calls in flight (stateful and stateless) with unavailable,
// unregisters the tools and does not wait for the calls' servers.
func TestCloseDuringCall(t *testing.T) {
	for _, mode := range []Mode{ModeStateful, ModeStateless} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := testServerStdio(t, "go")
			cfg.Mode = mode
			tk, c := mount(t, cfg)
			ctx := testCtx(t)
			closed := make(chan error, 1)
			var final *toolkit.Response
			for ev := range tk.Call(ctx, toolkit.ToolCall{ID: "b", Name: "mcp__go__block"}) {
				if ev.Progress != nil {
					go func() { closed <- c.Close() }()
				}
				if ev.Final != nil {
					final = ev.Final
				}
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			if final == nil || final.Code != toolkit.CodeUnavailable || !strings.Contains(final.Text(), "shut down") {
				t.Fatalf("final = %+v", final)
			}
			if len(tk.Tools()) != 0 {
				t.Fatalf("tools left: %d", len(tk.Tools()))
			}
		})
	}
}

func TestStdioEnvAndCwd(t *testing.T) {
	cfg := testServerStdio(t, "go")
	cfg.Env["TOOLBUS_TEST_VALUE"] = "from-config"
	cfg.Cwd = t.TempDir()
	tk, _ := mount(t, cfg)
	r := run(t, testCtx(t), tk, "mcp__go__env", nil)
	if want := "from-config " + cfg.Cwd; r.final.Text() != want {
		t.Fatalf("env = %q, want %q", r.final.Text(), want)
	}
}

// Servers that never answer the handshake, exit at once or do not exist
// are skipped at start and fail calls with unavailable; nothing hangs.
func TestUnreachableStdio(t *testing.T) {
	for _, tc := range []struct {
		name    string
		command string
		args    []string
		want    string
	}{
		{"silent", "sh", []string{"-c", "cat > /dev/null"}, "deadline exceeded"},
		{"exits", "sh", []string{"-c", "echo 'cannot open the database' >&2; exit 3"}, "cannot open the database"},
		{"missing", "/nonexistent/mcp-server", nil, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ServerConfig{Name: "bad", Transport: TransportStdio, Command: tc.command, Args: tc.args, ConnectTimeout: Duration(time.Second)}
			tk := toolkit.New(nil)
			c := newTestClient(t, cfg)
			ctx := testCtx(t)
			if err := c.Start(ctx, tk); err != nil {
				t.Fatalf("Start = %v, want nil (skipped)", err)
			}
			err := c.Call(ctx, "anything", nil, toolkit.WriterFuncs{})
			var te *toolkit.Error
			if !errors.As(err, &te) || te.Code != toolkit.CodeUnavailable || !strings.Contains(te.Message, tc.want) {
				t.Fatalf("Call = %v, want unavailable mentioning %q", err, tc.want)
			}
		})
	}
}

// A pinned protocol version skips server/discover and still works.
func TestPinnedProtocolVersion(t *testing.T) {
	cfg := testServerStdio(t, "go")
	cfg.ProtocolVersion = "2025-11-25"
	tk, c := mount(t, cfg)
	if r := run(t, testCtx(t), tk, "mcp__go__echo", map[string]any{"text": "pinned"}); r.final.Text() != "pinned" {
		t.Fatalf("final = %+v", r.final)
	}
	if v := c.current().cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Fatalf("negotiated %q", v)
	}
}

// TestPresetsForMCPTools: presets per MCP tool (1.x preset_kwargs_mapping)
// are hidden from the tool's schema and win over the model's input.
func TestPresetsForMCPTools(t *testing.T) {
	cfg := testServerStdio(t, "go")
	cfg.Presets = map[string]map[string]any{"echo": {"text": "from the preset"}, "nope": {"x": 1}}
	tk, _ := mount(t, cfg)
	s, ok := tk.Schema("mcp__go__echo")
	if !ok {
		t.Fatal("mcp__go__echo not registered")
	}
	if props, _ := s.Function.Parameters["properties"].(map[string]any); props["text"] != nil || props["n"] == nil {
		t.Errorf("schema still shows the preset: %v", s.Function.Parameters)
	}
	r := run(t, testCtx(t), tk, "mcp__go__echo", map[string]any{"text": "from the model"})
	if r.final.Text() != "from the preset" {
		t.Errorf("echo = %q", r.final.Text())
	}
	bad := ServerConfig{Name: "x", Command: "x", Presets: map[string]map[string]any{"echo": {}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "presets") {
		t.Errorf("an empty preset: %v", err)
	}
}

// TestMountedSchemasKeepServerOrder: a mounted server's tool schema keeps
// the order the server wrote its properties in (read off the wire over
// stdio and Streamable HTTP; legacy SSE comes out sorted).
func TestMountedSchemasKeepServerOrder(t *testing.T) {
	for transport, peer := range goPeers(t) {
		t.Run(transport, func(t *testing.T) {
			tk, _ := mount(t, peer(t, "go"))
			fs, ok := tk.Schema("mcp__go__ordered")
			if !ok {
				t.Fatal("no mcp__go__ordered")
			}
			b, err := json.Marshal(fs)
			if err != nil {
				t.Fatal(err)
			}
			zeta, alpha, mid := strings.Index(string(b), `"zeta"`), strings.Index(string(b), `"alpha"`), strings.Index(string(b), `"mid"`)
			inOrder := zeta < alpha && alpha < mid
			if transport == "sse" {
				if inOrder {
					t.Errorf("legacy SSE kept the order after all (update the docs): %s", b)
				}
				return
			}
			if !inOrder {
				t.Errorf("properties not in the server's order: %s", b)
			}
		})
	}
}

// A JSON-RPC error from the server (McpError in AgentScope) reaches the
// model as AgentScope words it: "Error occurred when calling MCP tool: "
// and the server's message.
func TestProtocolErrorText(t *testing.T) {
	for transport, peer := range goPeers(t) {
		t.Run(transport, func(t *testing.T) {
			_, c := mount(t, peer(t, "go"))
			err := c.Call(testCtx(t), "no-such-tool", nil, toolkit.WriterFuncs{})
			var te *toolkit.Error
			const prefix = "Error occurred when calling MCP tool: "
			if !errors.As(err, &te) || te.Code != toolkit.CodeToolError || !strings.HasPrefix(te.Message, prefix) ||
				!strings.Contains(te.Message[len(prefix):], "no-such-tool") {
				t.Errorf("protocol error = %#v, want %q and the server's message", err, prefix)
			}
		})
	}
}
