package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
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

// floodFleet is startFleet plus a worker serving flood: progress reports
// of 32 KiB every 5 ms until the call is cancelled; the channel hears
// when a call of it ends.
func floodFleet(t *testing.T) (*fleetFixture, chan struct{}) {
	t.Helper()
	f := startFleet(t)
	ended := make(chan struct{}, 1)
	tk := newWorkerToolkit(t, f.srv)
	msg := strings.Repeat("p", 32<<10)
	err := tk.Add(toolkit.Stream("flood", "Report progress until cancelled.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		defer func() { ended <- struct{}{} }()
		for i := 1; ctx.Err() == nil; i++ {
			if err := w.Progress(toolkit.Progress{Progress: float64(i), Message: msg}); err != nil {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
		return ctx.Err()
	}))
	if err != nil {
		t.Fatal(err)
	}
	serveWorker(t, f.srv, tk, "w-flood")
	return f, ended
}

// A client that stops reading its response stream (its receive window
// full) blocked the gateway's write for ever: the call's goroutine, its
// progress piling up from the bus, the session (never idle) and the
// connection were held until the client went away, however long.
func TestGatewayHTTPSlowConsumer(t *testing.T) {
	f, ended := floodFleet(t)
	g := newGateway(t, f)
	g.writeTimeout = time.Second
	u := serveGatewayHTTP(t, g)
	natstest.WaitFor(t, "the fleet to serve flood", func() bool { _, ok := g.fleet.Tool("flood"); return ok })
	session := openSession(t, u)
	conn := dialGateway(t, u)
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	req := rawRequest(u, http.MethodPost, session, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"flood","arguments":{},"_meta":{"progressToken":"p"}}}`)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // not reading
	del, _ := http.NewRequest(http.MethodDelete, u, nil)
	del.Header.Set("Mcp-Session-Id", session)
	// Guards against the hang only (the write blocked for ever): on a
	// busy machine the cancel's round trip through the fleet may take
	// seconds.
	hc := &http.Client{Timeout: natstest.Guard}
	resp, err := hc.Do(del)
	if err != nil {
		t.Fatalf("DELETE of the session whose client stopped reading: %v", err)
	}
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(natstest.Guard):
		t.Error("the call of the deleted session still runs")
	}
}

// Any request without a session id, whatever its method, made a session
// for itself (the gateway's getServer: a bus client, the session's groups
// and tools read over the bus, a go-sdk server) before the go-sdk answered
// it 400 or 405, and only POSTs counted toward MaxSessions: a flood of
// GETs was a flood of bus requests. Only a POST may open a session.
func TestGatewayHTTPNoSessionNoBus(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	u := serveGatewayHTTP(t, g)
	openSession(t, u)
	var before uint64
	natstest.WaitFor(t, "the gateway to be quiet on the bus", func() bool {
		before = g.nc.Stats().OutMsgs
		time.Sleep(300 * time.Millisecond)
		return g.nc.Stats().OutMsgs == before
	})
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, method := range []string{http.MethodGet, http.MethodDelete, http.MethodPut, http.MethodPatch, http.MethodOptions} {
		for range 5 {
			req, _ := http.NewRequest(method, u, nil)
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("%s without a session: %s, want a client error", method, resp.Status)
			}
		}
	}
	if n := g.nc.Stats().OutMsgs - before; n != 0 {
		t.Errorf("25 requests without a session that can open none sent %d messages on the bus, want none", n)
	}
}
