package mcp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"conns","version":"1"}}}`

// answered sends req on conn and reports whether the gateway answered it
// (false: it closed the connection instead).
func answered(t *testing.T, conn net.Conn, req string) bool {
	t.Helper()
	conn.SetDeadline(time.Now().Add(guardTimeout))
	if _, err := io.WriteString(conn, req); err != nil {
		return false // closed already
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	var ne net.Error
	switch {
	case err == nil:
		resp.Body.Close()
		return true
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("the gateway neither answered nor closed the connection within %v", guardTimeout)
	}
	return false
}

// openStream opens session's standalone event stream on a connection of
// its own: a request in progress for as long as the connection lasts.
// A connection closed without an answer is tried again: the connections
// of requests answered just before (initialize, Connection: close) hold
// their places until the server has closed them, and on a busy machine
// that may be when this one arrives, all places serving.
func openStream(t *testing.T, u, session string) net.Conn {
	t.Helper()
	var conn net.Conn
	natstest.WaitFor(t, "an event stream opened", func() bool {
		var ok bool
		conn, ok = tryStream(t, u, session)
		return ok
	})
	return conn
}

// tryStream tries once to open session's standalone event stream on a
// connection of its own, reporting false when the gateway closed the
// connection without an answer.
func tryStream(t *testing.T, u, session string) (net.Conn, bool) {
	t.Helper()
	conn := dialGateway(t, u)
	conn.SetDeadline(time.Now().Add(guardTimeout))
	if _, err := io.WriteString(conn, rawRequest(u, http.MethodGet, session, "")); err != nil {
		return nil, false
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("the gateway neither answered nor closed the connection within %v", guardTimeout)
	case err != nil:
		return nil, false // closed without an answer
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("event stream: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	conn.SetDeadline(time.Time{})
	return conn, true
}

// TestGatewayConnectionCap: GatewayOptions.MaxConns bounds the
// connections ServeListener holds. At the bound a new connection takes the
// place of one waiting for a request, a request in progress (here: two
// event streams) is never cut, and when every held connection is serving
// one, a new connection is closed without an answer; once a stream ends,
// a new client is served again. (The gateway used to accept every
// connection it was offered.)
func TestGatewayConnectionCap(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxConns: 2})
	u := serveGatewayHTTP(t, g)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: guardTimeout}
	t.Cleanup(hc.CloseIdleConnections)
	_, id1 := rawInitialize(t, hc, u)
	_, id2 := rawInitialize(t, hc, u)
	if id1 == "" || id2 == "" {
		t.Fatal("initialize opened no session")
	}

	openStream(t, u, id1)
	silent := dialGateway(t, u) // waiting for a request: the place the next takes
	stream2 := openStream(t, u, id2)
	if answered(t, silent, rawRequest(u, http.MethodPost, "", initializeBody)) {
		t.Error("a third connection was served beside two event streams at MaxConns 2; want the waiting one closed to make room for the second stream")
	}
	if answered(t, dialGateway(t, u), rawRequest(u, http.MethodPost, "", initializeBody)) {
		t.Error("a connection was served while both held connections carried event streams at MaxConns 2; want it closed at once")
	}

	stream2.Close()
	natstest.WaitFor(t, "an initialize answered once a stream ended", func() bool {
		return answered(t, dialGateway(t, u), rawRequest(u, http.MethodPost, "", initializeBody))
	})
}
