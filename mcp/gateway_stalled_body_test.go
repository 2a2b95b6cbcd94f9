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

	"github.com/toolbus/toolbus/internal/natstest"
)

// postHead is the head of a POST to the gateway at u in session (none if
// ""), announcing its body by length (chunked when n < 0) and asking for
// "100 Continue" before it.
func postHead(u, session string, n int) string {
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/mcp")
	var b strings.Builder
	fmt.Fprintf(&b, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nExpect: 100-continue\r\n", host)
	if session != "" {
		fmt.Fprintf(&b, "Mcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n", session)
	}
	if n < 0 {
		b.WriteString("Transfer-Encoding: chunked\r\n\r\n")
	} else {
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", n)
	}
	return b.String()
}

// continued sends head on a new connection until the gateway answers
// "100 Continue" (it reads the body: the request is in progress); one
// closed without an answer, all places serving, is tried again. The
// connection is returned with its reader, which has read the 100.
func continued(t *testing.T, u, head string) (net.Conn, *bufio.Reader) {
	t.Helper()
	var conn net.Conn
	var br *bufio.Reader
	natstest.WaitFor(t, "100 Continue", func() bool {
		conn = dialGateway(t, u)
		conn.SetDeadline(time.Now().Add(guardTimeout))
		if _, err := io.WriteString(conn, head); err != nil {
			return false
		}
		br = bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			t.Fatalf("the gateway neither answered nor closed the connection within %v", guardTimeout)
		case err != nil:
			return false // closed without an answer
		}
		if resp.StatusCode != http.StatusContinue {
			t.Fatalf("a POST announcing its body: %s, want 100 Continue", resp.Status)
		}
		return true
	})
	conn.SetDeadline(time.Time{})
	return conn, br
}

// gatewayAnswer is the answer a connection got, with what followed it.
type gatewayAnswer struct {
	what   string
	status int
	body   string
	err    error
	after  error // the read after the answer: io.EOF when closed
}

// awaitAnswer reads the answer on br in the background; after says
// whether to read on after it, for the connection's close.
func awaitAnswer(what string, conn net.Conn, br *bufio.Reader, after bool, ch chan<- gatewayAnswer) {
	conn.SetReadDeadline(time.Now().Add(2 * natstest.Guard))
	go func() {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			ch <- gatewayAnswer{what: what, err: err}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a := gatewayAnswer{what: what, status: resp.StatusCode, body: string(body)}
		if after {
			_, a.after = br.ReadByte()
		}
		ch <- a
	}()
}

// TestGatewayUnsentPostBodyMakesRoom: POSTs announcing bodies they never
// send (by length or chunked, an initialize or a session's request), the
// gateway reading them, held every place of MaxConns until the body's
// read timed out (30 s), a new client's connection closed at once all
// that time. One whose body has not come for 2 s now gives its place to
// a new connection, its request answered 408 and its connection closed:
// here three event streams, which hold their places, take the three.
func TestGatewayUnsentPostBodyMakesRoom(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxConns: 3})
	g.bodyTimeout = 10 * time.Minute // longer than the test waits
	u := serveGatewayHTTP(t, g)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: guardTimeout}
	var sessions []string
	for range 3 {
		_, id := rawInitialize(t, hc, u)
		if id == "" {
			t.Fatal("initialize opened no session")
		}
		sessions = append(sessions, id)
	}
	got := make(chan gatewayAnswer, 3)
	for _, c := range []struct {
		what, session string
		n             int
	}{{"an initialize", "", 1000}, {"a chunked initialize", "", -1}, {"a session's request", sessions[0], 1000}} {
		conn, br := continued(t, u, postHead(u, c.session, c.n))
		awaitAnswer(c.what, conn, br, true, got)
	}
	for i, id := range sessions {
		natstest.WaitFor(t, fmt.Sprintf("event stream %d of 3 opened while POSTs whose bodies never come held the places at MaxConns 3", i+1), func() bool {
			_, ok := tryStream(t, u, id)
			return ok
		})
	}
	for range 3 {
		select {
		case a := <-got:
			if a.err != nil || a.status != http.StatusRequestTimeout || a.after != io.EOF {
				t.Errorf("%s whose body never came, its place taken: %d %q, %v; then %v; want 408, then the connection closed", a.what, a.status, a.body, a.err, a.after)
			}
		case <-time.After(natstest.Guard):
			t.Fatal("three event streams took the places of three POSTs whose bodies never came, and one of them was not answered")
		}
	}
}

// TestGatewayProgressingBodyKept: a POST whose body comes slowly (a byte
// every 200 ms) keeps its place while new connections arrive at
// MaxConns, and is served; the one whose body does not come gives its
// place instead.
func TestGatewayProgressingBodyKept(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxConns: 2})
	g.bodyTimeout = 10 * time.Minute // longer than the test waits
	u := serveGatewayHTTP(t, g)
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: guardTimeout}
	_, session := rawInitialize(t, hc, u)
	if session == "" {
		t.Fatal("initialize opened no session")
	}
	continued(t, u, postHead(u, "", 1000)) // and nothing of its body
	body := strings.Repeat(" ", 10000) + `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	slow, br := continued(t, u, postHead(u, session, len(body)))
	got := make(chan gatewayAnswer, 1)
	awaitAnswer("ping", slow, br, false, got)
	stop := make(chan struct{})
	sent := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				_, err := io.WriteString(slow, body[i:])
				sent <- err
				return
			case <-time.After(200 * time.Millisecond):
			}
			if _, err := io.WriteString(slow, body[i:i+1]); err != nil {
				sent <- err
				return
			}
		}
	}()
	natstest.WaitFor(t, "an initialize answered while a POST whose body never comes held one of 2 places", func() bool {
		return answered(t, dialGateway(t, u), rawRequest(u, http.MethodPost, "", initializeBody))
	})
	close(stop)
	if err := <-sent; err != nil {
		t.Fatalf("the ping's body, sent slowly: %v", err)
	}
	a := <-got
	if a.err != nil || a.status != http.StatusOK || !strings.Contains(a.body, `"id":2`) || !strings.Contains(a.body, `"result"`) {
		t.Errorf("a ping whose body came slowly while new connections arrived at MaxConns: %d %q, %v; want 200 and its result", a.status, a.body, a.err)
	}
}
