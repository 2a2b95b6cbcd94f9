package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A go-sdk MCP server used as a peer where the npm servers cannot show a
// behaviour (every content type, late progress, header recording, expired
// sessions, list changes). It runs over real HTTP (a net/http server on a
// loopback port) or as a real stdio child process: the test binary
// re-executed with testServerEnv set.

const testServerEnv = "TOOLBUS_MCP_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) == "gateway" {
		os.Exit(gatewayStdioMain())
	}
	if os.Getenv(testServerEnv) == "conformance-client" {
		os.Exit(conformanceClientMain())
	}
	if os.Getenv(testServerEnv) == "stdio" {
		srv := newTestServer(nil)
		if err := srv.Run(context.Background(), &sdk.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testServerStdio(t testing.TB, name string) ServerConfig {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ServerConfig{Name: name, Transport: TransportStdio, Command: exe, Env: map[string]string{testServerEnv: "stdio"}}
}

type args struct {
	N    int    `json:"n,omitempty"`
	Text string `json:"text,omitempty"`
}

func progressToken(req *sdk.CallToolRequest) any { return req.Params.GetProgressToken() }

func notify(ctx context.Context, req *sdk.CallToolRequest, i, n int) error {
	tok := progressToken(req)
	if tok == nil {
		return nil
	}
	return req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(n), Message: "step"})
}

func textResult(s string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
}

// blockCancelled receives when the block tool sees its context cancelled
// (observable for the in-process HTTP peers).
var blockCancelled = make(chan struct{}, 16)

var pngBytes = []byte("\x89PNG\r\n\x1a\nnot-really-an-image")

func newTestServer(opts *sdk.ServerOptions) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "toolbus-test", Version: "1"}, opts)
	yes := true
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo text.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "progress", Description: "Send n progress notifications, then answer.",
		Annotations: &sdk.ToolAnnotations{IdempotentHint: true, DestructiveHint: &yes}},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			for i := 1; i <= in.N; i++ {
				if err := notify(ctx, req, i, in.N); err != nil {
					return nil, nil, err
				}
			}
			return textResult("done"), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "late", Description: "Answer, then send n progress notifications."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			go func() {
				for i := 1; i <= in.N; i++ {
					_ = notify(context.WithoutCancel(ctx), req, i, in.N)
				}
			}()
			return textResult("answered"), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "block", Description: "Send one progress notification, then wait for cancellation."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			_ = notify(ctx, req, 1, 0)
			<-ctx.Done()
			select {
			case blockCancelled <- struct{}{}:
			default:
			}
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "log", Description: "Log n messages, then answer."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			for i := 1; i <= in.N; i++ {
				if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: fmt.Sprint("message ", i)}); err != nil {
					return nil, nil, err
				}
			}
			return textResult("logged"), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "env", Description: "Return $TOOLBUS_TEST_VALUE and the working directory."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			return textResult(os.Getenv("TOOLBUS_TEST_VALUE") + " " + wd), nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail", Description: "Report a tool error."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "headers", Description: "Return the X-Api-Key request header."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			if req.Extra == nil || req.Extra.Header == nil {
				return textResult(""), nil, nil
			}
			return textResult(req.Extra.Header.Get("X-Api-Key")), nil, nil
		})
	size := int64(42)
	srv.AddTool(&sdk.Tool{Name: "content", Description: "Every content type.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{
				Content: []sdk.Content{
					&sdk.TextContent{Text: "hello"},
					&sdk.ImageContent{Data: pngBytes, MIMEType: "image/png"},
					&sdk.AudioContent{Data: []byte("RIFF....WAVE"), MIMEType: "audio/wav"},
					&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "note body"}},
					&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///blob.bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}},
					&sdk.ResourceLink{URI: "file:///big.csv", Name: "big.csv", MIMEType: "text/csv", Size: &size},
				},
				StructuredContent: map[string]any{"temperature": 21.5},
			}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "ordered", Description: "A schema whose properties are not in alphabetical order.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},"mid":{"type":"integer"}}}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult(string(req.Params.Arguments)), nil
		})
	srv.AddTool(&sdk.Tool{Name: "schema.v2", Description: "A raw schema with titles and $defs.", InputSchema: json.RawMessage(`{
		"type":"object","title":"Root",
		"properties":{"p":{"$ref":"#/$defs/P","title":"P field"}},
		"$defs":{"P":{"type":"object","title":"P","properties":{"x":{"type":"integer","title":"X"}}}}}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult(string(req.Params.Arguments)), nil
		})
	return srv
}

// httpPeer is a go-sdk server on a real loopback HTTP listener. It records
// the X-Api-Key and Mcp-Session-Id of every POST, can forget its sessions
// (as a restarted server does) and can go away and come back on the same
// address.
type httpPeer struct {
	t    testing.TB
	srv  *sdk.Server
	addr string
	sse  bool

	mu      sync.Mutex
	handler http.Handler
	posts   []postRecord
	hs      *http.Server
}

type postRecord struct{ apiKey, session, method string }

func startHTTPPeer(t testing.TB, sse bool) *httpPeer {
	t.Helper()
	p := &httpPeer{t: t, srv: newTestServer(&sdk.ServerOptions{PageSize: 3})}
	p.sse = sse
	p.reset()
	p.addr = "127.0.0.1:0"
	p.up()
	t.Cleanup(p.down)
	return p
}

func (p *httpPeer) url() string {
	if p.sse {
		return "http://" + p.addr + "/sse"
	}
	return "http://" + p.addr + "/mcp"
}

// reset replaces the handler: every existing session is forgotten.
func (p *httpPeer) reset() {
	var h http.Handler
	if p.sse {
		h = sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return p.srv }, nil)
	} else {
		h = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return p.srv }, nil)
	}
	p.mu.Lock()
	p.handler = h
	p.mu.Unlock()
}

func (p *httpPeer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if r.Method == http.MethodPost {
		p.posts = append(p.posts, postRecord{apiKey: r.Header.Get("X-Api-Key"), session: r.Header.Get("Mcp-Session-Id")})
	}
	h := p.handler
	p.mu.Unlock()
	h.ServeHTTP(w, r)
}

func (p *httpPeer) records() []postRecord {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]postRecord(nil), p.posts...)
}

// up (re)starts listening on p.addr (a fresh port the first time).
func (p *httpPeer) up() {
	p.t.Helper()
	var l net.Listener
	var err error
	for i := 0; i < 50; i++ { // the old socket may linger for a moment
		if l, err = net.Listen("tcp", p.addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		p.t.Fatal(err)
	}
	p.addr = l.Addr().String()
	hs := &http.Server{Handler: p}
	p.mu.Lock()
	p.hs = hs
	p.mu.Unlock()
	go func() { _ = hs.Serve(l) }()
}

// down stops the server and drops every connection.
func (p *httpPeer) down() {
	p.mu.Lock()
	hs := p.hs
	p.hs = nil
	p.mu.Unlock()
	if hs != nil {
		_ = hs.Close()
	}
}
