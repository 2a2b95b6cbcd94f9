package mcp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The gateway's HTTP side against a client on the network that does not
// play by the rules: it trickles its request, never reads the answer, or
// keeps a connection open doing nothing. Each holds a connection, a
// goroutine and what the request carries; none may do so for ever.

// openSession opens a session on the gateway at u and returns its id.
func openSession(t *testing.T, u string) string {
	t.Helper()
	code, id := rawInitialize(t, &http.Client{Timeout: 10 * time.Second}, u)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", code, id)
	}
	return id
}

// rawRequest is an HTTP/1.1 request to the gateway at u as bytes, so a
// test can send it as slowly as it likes.
func rawRequest(u, method, session, body string) string {
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	var b strings.Builder
	fmt.Fprintf(&b, "%s /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n", method, host)
	if session != "" {
		fmt.Fprintf(&b, "Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n", session)
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return b.String()
}

// dialGateway opens a TCP connection to the gateway at u, closed at the
// end of the test.
func dialGateway(t *testing.T, u string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// closedWithin reports whether the server closes conn within d, reading
// (and dropping) whatever it sends meanwhile.
func closedWithin(conn net.Conn, d time.Duration) bool {
	conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, conn)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// A request body trickled a byte at a time held its connection and
// handler for as long as the client liked: the server bounded the
// headers' time only. Many such requests would hold the gateway's
// connections and goroutines for ever.
func TestGatewayHTTPSlowBody(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	g.bodyTimeout = time.Second
	u := serveGatewayHTTP(t, g)
	session := openSession(t, u)
	for _, tc := range []struct{ name, session string }{{"initialize", ""}, {"call", session}} {
		t.Run(tc.name, func(t *testing.T) {
			conn := dialGateway(t, u)
			req := rawRequest(u, http.MethodPost, tc.session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"`+strings.Repeat("x", 100)+`"}}}`)
			head, body, _ := strings.Cut(req, "\r\n\r\n")
			if _, err := io.WriteString(conn, head+"\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				for i := range len(body) {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
					}
					if _, err := conn.Write([]byte{body[i]}); err != nil {
						return
					}
				}
			}()
			if !closedWithin(conn, 5*time.Second) {
				t.Errorf("a body trickled a byte every 100 ms: the connection is still open after 5 s, with a body timeout of 1 s")
			}
		})
	}
}

// A connection kept open after its request, doing nothing, was kept for
// ever: a client could hold as many of the gateway's file descriptors as
// it liked, one cheap request each.
func TestGatewayHTTPIdleConnection(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	g.idleTimeout = time.Second
	u := serveGatewayHTTP(t, g)
	conn := dialGateway(t, u)
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	if _, err := fmt.Fprintf(conn, "GET /elsewhere HTTP/1.1\r\nHost: %s\r\n\r\n", host); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !closedWithin(conn, 5*time.Second) {
		t.Errorf("a connection idle after its request is still open after 5 s, with an idle timeout of 1 s")
	}
}
