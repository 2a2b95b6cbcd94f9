package mcp

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGatewayUnsentBodyHoldsNoPlace: a GET or DELETE announcing a body
// (Content-Length) that never came was answered only once net/http had
// read the body, up to 256 KB, or its read timed out (30 s): meanwhile
// its connection was serving a request, a place the connection cap
// (MaxConns) never takes, so a client sending MaxConns such requests
// every 30 s had every other client's connection closed at once. Only a
// POST's body is read: such a request is answered at once and its
// connection closed after, as on the operator endpoint.
func TestGatewayUnsentBodyHoldsNoPlace(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxConns: 2})
	g.bodyTimeout = 10 * time.Minute // longer than the test waits for an answer
	u := serveGatewayHTTP(t, g)
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		conn := dialGateway(t, u)
		if _, err := fmt.Fprintf(conn, "%s /mcp HTTP/1.1\r\nHost: %s\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n", method, host); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(guardTimeout))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%s, its announced body not sent: %v (its answer waits for the body)", method, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if !resp.Close {
			t.Errorf("%s, its announced body not sent: %s, the connection kept; want it closed after the answer", method, resp.Status)
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("%s, its announced body not sent: the connection after the answer: %v, want it closed", method, err)
		}
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: guardTimeout}
	code, id := rawInitialize(t, hc, u)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize after two requests announcing bodies at MaxConns 2: %d, session %q", code, id)
	}
	// Served all the same: a session's event stream opened by a GET
	// announcing a body.
	conn := dialGateway(t, u)
	if _, err := fmt.Fprintf(conn, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\nContent-Length: 100000\r\n\r\n", host, id); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(guardTimeout))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the session's event stream, its GET announcing a body: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Errorf("the session's event stream, its GET announcing a body: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
}
