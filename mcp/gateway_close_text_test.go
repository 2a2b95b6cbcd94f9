package mcp

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayCloseResult: a call in flight when the gateway's Close is
// called ends, for its client still waiting on the call's POST, with
// the gateway's stop text, as for its Interrupt; Close closed the
// session as it cancelled the call, and the go-sdk writes nothing for a
// closing session, so the POST's stream ended without a result (a
// transport error to the client). Served by ServeListener (still
// listening) and by the gateway mounted as a handler on a server of the
// caller's.
func TestGatewayCloseResult(t *testing.T) {
	for _, how := range []string{"ServeListener", "mounted"} {
		t.Run(how, func(t *testing.T) {
			f := startFleet(t)
			var log lockedLog
			g := startGateway(t, f.srv, &GatewayOptions{Logger: slog.New(slog.NewTextHandler(&log, nil))})
			var u string
			if how == "ServeListener" {
				u = serveGatewayHTTP(t, g)
			} else {
				mux := http.NewServeMux()
				mux.Handle("/mcp", g)
				hs := httptest.NewServer(mux)
				t.Cleanup(hs.Close)
				u = hs.URL + "/mcp"
			}
			// A client that reconnects its event stream, as clients do by
			// default (TestGatewayMadeRoomText says why).
			c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u})
			waitTracked(t, g, 1)
			unblock, outcome := startSlow(t, f, c)
			t.Cleanup(unblock)
			closed := make(chan error, 1)
			go func() { closed <- g.Close() }()
			waitCancelled(t, f, guardTimeout, "Close")
			var o callOutcome
			select {
			case o = <-outcome:
			case <-time.After(guardTimeout):
				t.Fatal("the client got nothing for its call")
			}
			checkClosedResult(t, o, GatewayStoppedText)
			select {
			case <-closed:
			case <-time.After(guardTimeout):
				t.Fatal("Close has not returned")
			}
			if n := g.Sessions(); n != 0 {
				t.Errorf("%d sessions open after Close", n)
			}
			checkClosedLog(t, &log, GatewayStoppedText)
		})
	}
}

// TestGatewayCloseBounded: Close waits for the requests that may carry
// its sessions' results for a bounded time only: one that never returns
// (here a request of the session noted as in flight and never ended)
// does not hold Close.
func TestGatewayCloseBounded(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	waitTracked(t, g, 1)
	g.live()[0].request(0, true) // never done
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case <-closed:
	case <-time.After(guardTimeout):
		t.Fatal("Close has not returned")
	}
	if n := g.Sessions(); n != 0 {
		t.Errorf("%d sessions open after Close", n)
	}
}

// TestGatewayCloseTwice: a second Close while the first waits (here for
// a request of a session that may carry a call's result, noted in flight
// and never ended, as a call whose worker is slow to answer its cancel
// holds it) returned nil at once, the sessions still open and the bus
// clients not closed, so a caller that closed the gateway from two
// places went on while it was still shutting down. It waits for the
// first Close's shutdown, as http.Server.Shutdown's callers do, and
// returns its error.
func TestGatewayCloseTwice(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	waitTracked(t, g, 1)
	g.live()[0].request(0, true) // never done: the first Close waits its bound
	first := make(chan error, 1)
	go func() { first <- g.Close() }()
	natstest.WaitFor(t, "the first Close to start", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.closed
	})
	if err := g.Close(); err != nil {
		t.Errorf("the second Close: %v", err)
	}
	if n := g.Sessions(); n != 0 {
		t.Errorf("%d sessions open after the second Close returned", n)
	}
	if final := g.client.Invoke(natstest.Ctx(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}}); !strings.Contains(final.Text(), "the client is closed") {
		t.Errorf("a call through the gateway's bus client after the second Close returned: %s %q, want it closed", final.Code, final.Text())
	}
	select {
	case err := <-first:
		if err != nil {
			t.Errorf("the first Close: %v", err)
		}
	case <-time.After(guardTimeout):
		t.Fatal("the first Close has not returned")
	}
}
