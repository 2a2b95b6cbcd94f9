package mcp

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayListeningSessionStays: a client that only listens on its
// event stream (the GET the go-sdk's client opens after initialize) has a
// request open, so its session is not idle (mcp doc: a session ends after
// no request of it was open for SessionTimeout). The go-sdk's own timer
// counts only POSTs: it closed such a session at SessionTimeout, and the
// client's next call found it gone.
func TestGatewayListeningSessionStays(t *testing.T) {
	f := startFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	const timeout = 300 * time.Millisecond
	g := startGateway(t, f.srv, &GatewayOptions{SessionTimeout: timeout})
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g), MaxRetries: -1})
	waitTracked(t, g, 1)
	s := g.sessionByID(c.cs.ID())
	// The event stream is open once the session counts a request that
	// carries no call.
	for deadline := time.Now().Add(guardTimeout); ; time.Sleep(10 * time.Millisecond) {
		s.idleMu.Lock()
		listening := s.active > s.calls
		s.idleMu.Unlock()
		if listening {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the client's event stream never opened")
		}
	}
	time.Sleep(5 * timeout)
	if n := g.Sessions(); n != 1 {
		t.Fatalf("%d sessions tracked after %v of listening, want 1", n, 5*timeout)
	}
	if _, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
		t.Fatalf("a call after %v of listening: %v", 5*timeout, err)
	}
}

// TestGatewaySilentSessionEnds: the idle close is the gateway's alone
// now, so a session whose client initialized and then sent nothing more
// (no request with its id) still ends after SessionTimeout.
func TestGatewaySilentSessionEnds(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{SessionTimeout: 300 * time.Millisecond})
	req, _ := http.NewRequest(http.MethodPost, serveGatewayHTTP(t, g), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s", resp.Status)
	}
	natstest.WaitFor(t, "the silent session to end", func() bool { return g.Sessions() == 0 })
}

// TestGatewayIdleTimerStaleFire: the idle timer fired just as a request
// came, and its callback ran once that request had ended (it waits for
// the lock the request's start and end take): it found no request in
// flight and ended the session, which had just been used and whose new
// timer had just been armed. The callback is run here as that late one.
func TestGatewayIdleTimerStaleFire(t *testing.T) {
	f := startFleet(t)
	const timeout = time.Hour
	g := startGateway(t, f.srv, &GatewayOptions{SessionTimeout: timeout})
	s := g.sessionByID(openSession(t, serveGatewayHTTP(t, g)))
	if s == nil {
		t.Fatal("the session is not tracked")
	}
	s.request(timeout, false)() // a request, begun and ended as the timer fired
	s.idleClose()               // the fired timer's callback, run after it
	if s.ctx.Err() != nil {
		t.Fatal("a session used a moment ago was ended by its idle timer")
	}
	if n := g.Sessions(); n != 1 {
		t.Fatalf("%d sessions tracked, want 1", n)
	}
}
