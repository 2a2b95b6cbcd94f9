package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
	"gopkg.in/yaml.v3"
)

func TestValidate(t *testing.T) {
	stdio := ServerConfig{Name: "s", Transport: TransportStdio, Command: "srv"}
	web := ServerConfig{Name: "w", Transport: TransportStreamableHTTP, URL: "http://127.0.0.1:1/mcp"}
	with := func(base ServerConfig, f func(*ServerConfig)) ServerConfig { f(&base); return base }
	tests := []struct {
		name string
		cfg  ServerConfig
		err  string // "" = valid
	}{
		{"stdio", stdio, ""},
		{"http", web, ""},
		{"sse stateless with headers", with(web, func(c *ServerConfig) {
			c.Transport, c.Mode, c.Headers = TransportSSE, ModeStateless, map[string]string{"Authorization": "Bearer x"}
		}), ""},
		{"filters without overlap", with(stdio, func(c *ServerConfig) { c.EnableTools, c.DisableTools = []string{"a"}, []string{"b"} }), ""},
		{"group", with(stdio, func(c *ServerConfig) { c.Group = "files" }), ""},
		{"no name", with(stdio, func(c *ServerConfig) { c.Name = "" }), "needs a name"},
		{"bad name", with(stdio, func(c *ServerConfig) { c.Name = "a.b" }), "invalid server name"},
		// Server a listing a tool x__b would take mcp__a__x__b, the name of
		// server a__x's tool b (and its calls) when registered first.
		{"name with __", with(stdio, func(c *ServerConfig) { c.Name = "a__x" }), "another server's"},
		{"name ending in _", with(stdio, func(c *ServerConfig) { c.Name = "a_" }), "another server's"},
		{"name starting with _", with(stdio, func(c *ServerConfig) { c.Name = "_a" }), "another server's"},
		{"name with _", with(stdio, func(c *ServerConfig) { c.Name = "my_server" }), ""},
		{"no transport", with(stdio, func(c *ServerConfig) { c.Transport, c.Command = "", "" }), "give either a command"},
		{"unknown transport", with(stdio, func(c *ServerConfig) { c.Transport = "websocket" }), "invalid transport"},
		{"stdio without command", with(stdio, func(c *ServerConfig) { c.Command = "" }), "needs a command"},
		{"stdio with url", with(stdio, func(c *ServerConfig) { c.URL = "http://x" }), "has no url"},
		{"stdio with headers", with(stdio, func(c *ServerConfig) { c.Headers = map[string]string{"A": "b"} }), "takes no headers"},
		{"http without url", with(web, func(c *ServerConfig) { c.URL = "" }), "needs a url"},
		{"http relative url", with(web, func(c *ServerConfig) { c.URL = "/mcp" }), "absolute http"},
		{"http bad scheme", with(web, func(c *ServerConfig) { c.URL = "ftp://h/mcp" }), `scheme "ftp" is not one of http, https`},
		{"http with command", with(web, func(c *ServerConfig) { c.Command = "x" }), "are for stdio"},
		{"http with env", with(web, func(c *ServerConfig) { c.Env = map[string]string{"A": "b"} }), "are for stdio"},
		{"reserved header", with(web, func(c *ServerConfig) { c.Headers = map[string]string{"Host": "h"} }), "cannot be set"},
		{"content type", with(web, func(c *ServerConfig) { c.Headers = map[string]string{"Content-Type": "text/plain"} }), `header "Content-Type" is managed`},
		{"accept", with(web, func(c *ServerConfig) { c.Headers = map[string]string{"accept": "text/html"} }), `header "accept" is managed`},
		{"session id", with(web, func(c *ServerConfig) { c.Headers = map[string]string{"Mcp-Session-Id": "x"} }), "cannot be set"},
		{"bad header name", with(web, func(c *ServerConfig) { c.Headers = map[string]string{"a b": "c"} }), "not a valid HTTP token"},
		{"bad header value", with(web, func(c *ServerConfig) { c.Headers = map[string]string{"A": "b\nc"} }), "control character"},
		{"unknown mode", with(stdio, func(c *ServerConfig) { c.Mode = "sometimes" }), "invalid value \"sometimes\""},
		{"bad group", with(stdio, func(c *ServerConfig) { c.Group = "my group" }), "group"},
		{"group at the bound", with(stdio, func(c *ServerConfig) { c.Group = strings.Repeat("g", toolkit.MaxNameLen) }), ""},
		// The toolkit refuses it at AddGroup and InGroup, once the server
		// is connected.
		{"long group", with(stdio, func(c *ServerConfig) { c.Group = strings.Repeat("g", 300) }), "group: a group name of 300 bytes: at most 255"},
		{"empty enable name", with(stdio, func(c *ServerConfig) { c.EnableTools = []string{""} }), "enable_tools: contains an empty name"},
		{"overlap", with(stdio, func(c *ServerConfig) { c.EnableTools, c.DisableTools = []string{"a", "b"}, []string{"b", "c"} }), `tool "b" is both enabled and disabled`},
		{"protocol version", with(stdio, func(c *ServerConfig) { c.ProtocolVersion = "2025-11-25" }), ""},
		{"bad protocol version", with(stdio, func(c *ServerConfig) { c.ProtocolVersion = "latest" }), "not an MCP protocol version"},
		{"negative timeout", with(stdio, func(c *ServerConfig) { c.Timeout = Duration(-time.Second) }), "timeout: negative duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.err == "" {
				if err != nil {
					t.Fatalf("Validate = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Validate = %v, want an ErrInvalidConfig containing %q", err, tc.err)
			}
			if _, err := NewClient(tc.cfg, nil); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewClient accepted an invalid config: %v", err)
			}
		})
	}
}

func TestConfigYAMLAndJSON(t *testing.T) {
	src := `
mcp_servers:
  - name: everything
    transport: stdio
    command: npx
    args: [-y, "@modelcontextprotocol/server-everything"]
    env: {DEBUG: "1"}
    group: demo
    disable_tools: [toggle-simulated-logging]
    timeout: 90s
  - name: search
    transport: streamable-http
    url: https://search.example.com/mcp
    headers: {Authorization: Bearer abc}
    mode: stateless
    enable_tools: [search]
    timeout: 2.5
    connect_timeout: 1m
`
	var doc struct {
		Servers []ServerConfig `yaml:"mcp_servers"`
	}
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 2 {
		t.Fatalf("servers = %+v", doc.Servers)
	}
	ev, se := doc.Servers[0], doc.Servers[1]
	if ev.Command != "npx" || len(ev.Args) != 2 || ev.Env["DEBUG"] != "1" || ev.Group != "demo" ||
		ev.DisableTools[0] != "toggle-simulated-logging" || time.Duration(ev.Timeout) != 90*time.Second {
		t.Errorf("everything = %+v", ev)
	}
	if se.Mode != ModeStateless || se.Headers["Authorization"] != "Bearer abc" || time.Duration(se.Timeout) != 2500*time.Millisecond ||
		time.Duration(se.ConnectTimeout) != time.Minute {
		t.Errorf("search = %+v", se)
	}
	for _, c := range doc.Servers {
		if err := c.Validate(); err != nil {
			t.Error(err)
		}
	}
	// JSON round trip.
	b, err := json.Marshal(se)
	if err != nil {
		t.Fatal(err)
	}
	var back ServerConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Timeout != se.Timeout || back.URL != se.URL || back.Mode != se.Mode {
		t.Errorf("JSON round trip: %s → %+v", b, back)
	}
	if err := json.Unmarshal([]byte(`{"timeout": 3}`), &back); err != nil || time.Duration(back.Timeout) != 3*time.Second {
		t.Errorf("numeric JSON timeout: %v %v", err, back.Timeout)
	}
	// Bad durations are errors, not zero.
	for _, bad := range []string{`{"timeout": "soon"}`, `{"timeout": true}`} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := yaml.Unmarshal([]byte("timeout: soon\n"), &back); err == nil {
		t.Error("yaml timeout: soon accepted")
	}
	if err := yaml.Unmarshal([]byte("timeout: [1]\n"), &back); err == nil {
		t.Error("yaml timeout: [1] accepted")
	}
}

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"ev", "echo", "mcp__ev__echo"},
		{"ev", "trigger-long-running-operation", "mcp__ev__trigger-long-running-operation"},
		{"fs", "read_file", "mcp__fs__read_file"},
		{"x", "a.b/c d", "mcp__x__axbxcxd"},
		{"x", "héllo", "mcp__x__hxllo"},
		{"x", "", "mcp__x__"},
	} {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
}

func TestInputSchema(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"nil", nil, `{"properties":{},"type":"object"}`},
		{"no type", map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}}}, `{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{"titles stripped, defs kept", map[string]any{
			"type": "object", "title": "T",
			"properties": map[string]any{"title": map[string]any{"type": "string", "title": "Title"}, "p": map[string]any{"$ref": "#/$defs/P"}},
			"$defs":      map[string]any{"P": map[string]any{"type": "integer", "title": "P"}},
			"required":   []any{},
		}, `{"$defs":{"P":{"type":"integer"}},"properties":{"p":{"$ref":"#/$defs/P"},"title":{"type":"string"}},"required":[],"type":"object"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := inputSchema(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if string(b) != tc.want {
				t.Fatalf("got %s\nwant %s", b, tc.want)
			}
		})
	}
}

func TestToolOptions(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name     string
		ann      *sdk.ToolAnnotations
		readOnly bool
		idem     toolkit.Idempotency
	}{
		{"none", nil, false, toolkit.IdempotencyUnknown},
		{"read-only", &sdk.ToolAnnotations{ReadOnlyHint: true}, true, toolkit.NoSideEffects},
		{"read-only wins over idempotent", &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}, true, toolkit.NoSideEffects},
		{"destructive idempotent", &sdk.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true}, false, toolkit.Idempotent},
		{"destructive", &sdk.ToolAnnotations{DestructiveHint: &yes}, false, toolkit.IdempotencyUnknown},
		{"additive", &sdk.ToolAnnotations{DestructiveHint: &no}, false, toolkit.IdempotencyUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := toolkit.New(nil)
			tl := toolkit.Raw("t", "d", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil })
			if err := tk.Add(tl, toolOptions(&sdk.Tool{Name: "t", Annotations: tc.ann}, "")...); err != nil {
				t.Fatal(err)
			}
			got, _ := tk.Get("t")
			if got.ReadOnly() != tc.readOnly || got.Idempotency() != tc.idem || got.ConcurrencySafe() {
				t.Fatalf("readOnly=%v idem=%v concurrencySafe=%v", got.ReadOnly(), got.Idempotency(), got.ConcurrencySafe())
			}
		})
	}
}

func TestSSETap(t *testing.T) {
	var r progressRouter
	sink := r.open("tok")
	stream := "event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":1,\"total\":2}}\r\n\r\n" +
		": a comment\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\n" + // a JSON split over data lines
		"data: \"params\":{\"progressToken\":\"tok\",\"progress\":2,\"message\":\"m\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"hello\"}}\n\n" + // the call's log
		"data: {\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"a request\"}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"other\",\"progress\":9}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":7,\"progress\":9}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"" + strings.Repeat("x", maxTapLine) + "\"}]}}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":3}}\n\n"
	// Feed it in awkward pieces.
	tap := newSSETap(nil, &r, "tok")
	for i := 0; i < len(stream); i += 7 {
		tap.feed([]byte(stream[i:min(i+7, len(stream))]))
	}
	var got []string
	for _, it := range sink.take() {
		if it.log != nil {
			got = append(got, fmt.Sprintf("log %s %v", it.log.Level, it.log.Data))
		} else {
			got = append(got, fmt.Sprintf("progress %v", it.progress))
		}
	}
	want := []string{
		fmt.Sprintf("progress %v", toolkit.Progress{Progress: 1, Total: 2}),
		fmt.Sprintf("progress %v", toolkit.Progress{Progress: 2, Message: "m"}),
		"log info hello",
		fmt.Sprintf("progress %v", toolkit.Progress{Progress: 3}),
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	r.close("tok")
	tap.feed([]byte("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"tok\",\"progress\":4}}\n\n"))
	if late := sink.take(); len(late) != 0 {
		t.Fatalf("progress after close: %+v", late)
	}
}

func TestMount(t *testing.T) {
	tk := toolkit.New(nil)
	ctx := testCtx(t)
	stdio := testServerStdio(t, "a")
	dup := stdio
	if _, err := Mount(ctx, tk, []ServerConfig{stdio, dup}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("duplicate names: %v", err)
	}
	bad := stdio
	bad.Name = "b"
	bad.EnableTools = []string{"nope"}
	if _, err := Mount(ctx, tk, []ServerConfig{stdio, bad}, nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown enable name: %v", err)
	}
	if n := len(tk.Tools()); n != 0 {
		t.Fatalf("a failed mount left %d tools", n)
	}
	down := ServerConfig{Name: "down", Transport: TransportStreamableHTTP, URL: "http://127.0.0.1:1/mcp", ConnectTimeout: Duration(2 * time.Second)}
	s, err := Mount(ctx, tk, []ServerConfig{stdio, down}, nil)
	if err != nil {
		t.Fatalf("a server that is down must not fail the mount: %v", err)
	}
	defer s.Close()
	if _, ok := tk.Get("mcp__a__echo"); !ok {
		t.Fatal("mcp__a__echo missing")
	}
	if _, ok := s.Get("down"); !ok || len(s.Clients()) != 2 {
		t.Fatal("clients missing")
	}
	if err := s.SetRuntimeHeaders("down", map[string]string{"X-Key": "k"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRuntimeHeaders("nope", nil); !errors.Is(err, ErrRuntimeHeaders) {
		t.Fatalf("unknown server: %v", err)
	}
	if err := s.SetRuntimeHeaders("a", map[string]string{"X-Key": "k"}); !errors.Is(err, ErrRuntimeHeaders) {
		t.Fatalf("stdio server: %v", err)
	}
	var req wire.HeadersRequest
	if err := json.Unmarshal([]byte(`{"server":"down","headers":{"Authorization":"Bearer k2"}}`), &req); err != nil {
		t.Fatal(err)
	}
	if rep := s.Apply(req); !rep.OK || rep.Error != "" {
		t.Fatalf("Apply = %+v", rep)
	}
	if rep := s.Apply(wire.HeadersRequest{Server: "down", Headers: map[string]string{"Host": "x"}}); rep.OK || !strings.Contains(rep.Error, "Host") {
		t.Fatalf("Apply(Host) = %+v", rep)
	}
	r := run(t, ctx, tk, "mcp__a__echo", map[string]any{"text": "mounted"})
	if r.final.Text() != "mounted" {
		t.Fatalf("final = %+v", r.final)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(tk.Tools()); n != 0 {
		t.Fatalf("Close left %d tools", n)
	}
	c, _ := s.Get("a")
	if err := c.Call(ctx, "echo", nil, toolkit.WriterFuncs{}); toolkit.CodeOf(err) != toolkit.CodeUnavailable {
		t.Fatalf("call after Close: %v", err)
	}
}
