package mcp

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

// rawSessionRequest sends one HTTP request in session id with the
// protocol version header version ("" for none) and returns its status
// and body.
func rawSessionRequest(t *testing.T, method, u, id, version, body string, header http.Header) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if h := req.Header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := (&http.Client{Timeout: guardTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A DELETE the go-sdk refuses (a protocol version it does not serve, a
// Host header its DNS-rebinding guard refuses) ended the session's calls
// all the same, before the go-sdk looked at it: the session stayed open,
// and every later call of it ended interrupted at once.
func TestGatewayRefusedDeleteKeepsSession(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	for _, tc := range []struct {
		name    string
		version string
		header  http.Header
	}{
		{"unknown version", "2025-01-01", nil},
		{"foreign host", "2025-06-18", http.Header{"Host": {"evil.example:80"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := openSession(t, u)
			code, body := rawSessionRequest(t, http.MethodDelete, u, id, tc.version, "", tc.header)
			if code < 400 {
				t.Fatalf("DELETE: %d %s, want it refused", code, body)
			}
			code, body = rawSessionRequest(t, http.MethodPost, u, id, "2025-06-18",
				`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`, nil)
			if code != http.StatusOK || !strings.Contains(body, `"toolbus/state":"success"`) {
				t.Errorf("a call after a refused DELETE: %d %s, want it run", code, body)
			}
		})
	}
}

// A DELETE whose Host is a loopback address with a zone ("[::1%25lo]",
// which the go-sdk's guard reads as loopback) was taken for one the
// go-sdk refuses: the session's calls were not ended first, and the
// go-sdk's close of the session waited for them, so the DELETE of a
// session with a call that runs until cancelled was never answered.
func TestGatewayZonedLoopbackDeleteEndsCalls(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	id := openSession(t, u)
	called := make(chan struct{})
	go func() {
		defer close(called)
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if resp, err := (&http.Client{Timeout: guardTimeout}).Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	defer func() { <-called }()
	s := g.sessionByID(id)
	natstest.WaitFor(t, "the slow call's request", func() bool {
		s.idleMu.Lock()
		defer s.idleMu.Unlock()
		return s.calls > 0
	})
	conn := dialGateway(t, u)
	fmt.Fprintf(conn, "DELETE /mcp HTTP/1.1\r\nHost: [::1%%25lo]:80\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: 0\r\n\r\n", id)
	conn.SetReadDeadline(time.Now().Add(guardTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("DELETE with a zoned loopback Host, a call in flight: no answer (%v)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE with a zoned loopback Host: %s, want 204", resp.Status)
	}
}
