package main_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
)

// headerPeer is a go-sdk Streamable HTTP server whose "headers" tool
// returns the X-Api-Key request header, traceparent the traceparent one; it records the session id of
// every POST.
type headerPeer struct {
	url      string
	mu       sync.Mutex
	sessions map[string]bool
}

func startHeaderPeer(t *testing.T) *headerPeer {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "header-peer", Version: "1"}, nil)
	type none struct{}
	sdk.AddTool(srv, &sdk.Tool{Name: "headers", Description: "Return the X-Api-Key request header."},
		func(_ context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			key := ""
			if req.Extra != nil && req.Extra.Header != nil {
				key = req.Extra.Header.Get("X-Api-Key")
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "key=" + key}}}, nil, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "traceparent", Description: "Return the traceparent request header."},
		func(_ context.Context, req *sdk.CallToolRequest, _ none) (*sdk.CallToolResult, any, error) {
			tp := ""
			if req.Extra != nil && req.Extra.Header != nil {
				tp = req.Extra.Header.Get("traceparent")
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: tp}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	p := &headerPeer{sessions: map[string]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := r.Header.Get("Mcp-Session-Id"); r.Method == http.MethodPost && id != "" {
			p.mu.Lock()
			p.sessions[id] = true
			p.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	p.url = "http://" + l.Addr().String() + "/mcp"
	return p
}

func (p *headerPeer) sessionCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.sessions)
}

// TestMCPRuntimeHeaders: the worker's control operation replaces the
// headers sent to a Streamable HTTP server without a new session; an
// empty map restores the configured ones; forbidden headers are refused.
func TestMCPRuntimeHeaders(t *testing.T) {
	peer := startHeaderPeer(t)
	cfg := filepath.Join(t.TempDir(), "worker.yaml")
	mustWrite(t, cfg, fmt.Sprintf("mcp_servers:\n  - name: api\n    url: %s\n    headers: {X-Api-Key: static}\n", peer.url))
	w := startWorker(t, "--config", cfg, "--instance", "hw1")
	nc, err := nats.Connect(w.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)

	steps := []struct {
		control string // "" calls without a control request first
		reply   string
		key     string
	}{
		{"", "", "key=static"},
		{`{"server":"api","headers":{"X-Api-Key":"rotated"}}`, `{"ok":true}`, "key=rotated"},
		{`{"server":"api","headers":{"Host":"evil.example"}}`, `"ok":false`, "key=rotated"},
		{`{"server":"api","headers":{}}`, `{"ok":true}`, "key=static"},
	}
	for i, s := range steps {
		if s.control != "" {
			m, err := nc.RequestMsg(jsonControl(wire.HeadersSubject("hw1"), s.control), guard)
			if err != nil || !strings.Contains(string(m.Data), s.reply) {
				t.Fatalf("step %d: control %s: %v, reply %s; want %s", i, s.control, err, m.Data, s.reply)
			}
		}
		so, se, code := toolctl(t, w.url, "call", "mcp__api__headers")
		if code != 0 || strings.TrimSpace(so) != s.key {
			t.Errorf("step %d: call: exit %d, %q, want %q\n%s", i, code, so, s.key, se)
		}
	}
	// The same through toolctl (to every live worker, or one), and its
	// bad input.
	ctl := []struct {
		args []string
		code int
		out  string
		key  string
	}{
		{[]string{"mcp-headers", "api", "X-Api-Key=from-toolctl"}, 0, "hw1: headers of api replaced", "key=from-toolctl"},
		{[]string{"mcp-headers", "--instance", "hw1", "api"}, 0, "hw1: headers of api back to the configured ones", "key=static"},
		{[]string{"mcp-headers", "api", "Host=evil"}, 1, "", "key=static"},
		{[]string{"mcp-headers", "nowhere", "A=b"}, 1, "", "key=static"},
		{[]string{"mcp-headers", "api", "novalue"}, 2, "", "key=static"},
		{[]string{"mcp-headers"}, 2, "", "key=static"},
	}
	for _, c := range ctl {
		out, se, code := toolctl(t, w.url, c.args...)
		if code != c.code || !strings.Contains(out, c.out) {
			t.Errorf("toolctl %v: exit %d (want %d), stdout %q (want %q)\n%s", c.args, code, c.code, out, c.out, se)
		}
		if so, _, code := toolctl(t, w.url, "call", "mcp__api__headers"); code != 0 || strings.TrimSpace(so) != c.key {
			t.Errorf("after toolctl %v: %q, want %q", c.args, so, c.key)
		}
	}
	if n := peer.sessionCount(); n != 1 {
		t.Errorf("the server saw %d sessions, want 1 (headers change without reconnecting)", n)
	}
}

// jsonControl is a control request with a JSON body, as `nats req … -H
// Content-Type:application/json` sends it.
func jsonControl(subject, body string) *nats.Msg {
	m := &nats.Msg{Subject: subject, Data: []byte(body), Header: nats.Header{}}
	m.Header.Set(wire.HeaderContentType, wire.ContentTypeJSON)
	return m
}
