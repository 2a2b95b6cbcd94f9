package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// goneAnswer sends method (GET or POST, a ping) in session id and returns
// the status and body of the answer.
func goneAnswer(t *testing.T, hc *http.Client, u, method, id string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	}
	req, _ := http.NewRequest(method, u, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b)
}

// checkGone checks that a GET and a POST in session id, which ended, are
// answered 404 saying why (why) and to initialize a new session.
func checkGone(t *testing.T, u, id, why string) {
	t.Helper()
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		code, body := goneAnswer(t, http.DefaultClient, u, method, id)
		if code != http.StatusNotFound || !strings.Contains(body, why) || !strings.Contains(body, "initialize a new session") {
			t.Errorf("%s in the ended session: %d %q; want 404 saying %q and to initialize a new session", method, code, body, why)
		}
	}
}

// TestGatewayGoneSessionSaysWhy: a client coming back (GET or POST) with
// the id of a session the gateway closed for its bounds got the go-sdk's
// bare "session not found"; with no request open when its session went,
// it had no other way to learn why (its calls' GatewayIdleClosedText
// reached only the gateway's log). It gets 404 still, as MCP wants for an
// ended session (a client then initializes a new one, and the go-sdk
// client sees ErrSessionMissing), with a text saying why the gateway
// ended it and what to do; an unknown id gets the go-sdk's answer.
func TestGatewayGoneSessionSaysWhy(t *testing.T) {
	f := startFleet(t)
	check := checkGone
	t.Run("idle", func(t *testing.T) {
		g := startGateway(t, f.srv, &GatewayOptions{SessionTimeout: 100 * time.Millisecond})
		u := serveGatewayHTTP(t, g)
		code, id := rawInitialize(t, http.DefaultClient, u)
		if code != http.StatusOK || id == "" {
			t.Fatalf("initialize: %d, session %q", code, id)
		}
		waitTracked(t, g, 0) // tracked by its initialize's answer, then closed, idle
		check(t, u, id, "idle for longer than its session timeout (100ms)")
		if code, body := goneAnswer(t, http.DefaultClient, u, http.MethodPost, "no-such-session"); code != http.StatusNotFound || body != "session not found\n" {
			t.Errorf("a ping in an unknown session: %d %q; want the go-sdk's 404", code, body)
		}
	})
	t.Run("made room", func(t *testing.T) {
		g := startGateway(t, f.srv, &GatewayOptions{MaxSessions: 2})
		u := serveGatewayHTTP(t, g)
		hog, alice := fromAddress(t, "127.0.0.1"), fromAddress(t, "127.0.0.2")
		var clients []*mcpClient
		for range 2 {
			clients = append(clients, connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: hog, DisableStandaloneSSE: true}))
		}
		waitTracked(t, g, 2)
		if code, _ := rawInitialize(t, alice, u); code != http.StatusOK {
			t.Fatalf("the newcomer's initialize: %d", code)
		}
		ended := 0
		for _, c := range clients {
			_, err := c.cs.ListTools(natstest.Ctx(t), nil)
			if err == nil {
				continue
			}
			ended++
			if !errors.Is(err, sdk.ErrSessionMissing) {
				t.Errorf("the ended session's client got %v; want sdk.ErrSessionMissing, so that it initializes anew", err)
			}
			check(t, u, c.cs.ID(), "to make room for another client's session")
		}
		if ended != 1 {
			t.Errorf("%d sessions ended to make room for one", ended)
		}
	})
}

// TestGatewayGoneBounded: the gateway remembers the last maxGone sessions
// of a source that ended for a reason a client is told (goneWhy),
// forgetting the oldest first, and only those (TestGatewayGoneShare: of
// many sources).
func TestGatewayGoneBounded(t *testing.T) {
	g := &Gateway{}
	g.mu.Lock()
	for i := range maxGone + 1 {
		g.rememberGoneLocked(&gatewaySession{id: fmt.Sprint("s", i), source: "address 127.0.0.1"}, errSessionIdle)
	}
	g.rememberGoneLocked(&gatewaySession{id: "no reason", source: "address 127.0.0.1"}, context.Canceled)
	g.rememberGoneLocked(&gatewaySession{id: "stdio"}, errSessionIdle)
	g.mu.Unlock()
	if q := g.goneBySource["address 127.0.0.1"]; len(g.gone) != maxGone || len(q) != maxGone || len(g.goneBySource) != 1 {
		t.Fatalf("%d sessions remembered (%d of %d sources in order), want %d", len(g.gone), len(q), len(g.goneBySource), maxGone)
	}
	for id, want := range map[string]bool{"s0": false, "s1": true, fmt.Sprint("s", maxGone): true, "no reason": false, "stdio": false} {
		if got := g.goneText(id, "") != ""; got != want {
			t.Errorf("session %s remembered: %v, want %v", id, got, want)
		}
	}
	if got := g.goneText("s1", "someone-else"); got != "" {
		t.Errorf("another identity is told %q", got)
	}
}

// TestGatewayEndedSessionSaysWhy: a client coming back with the id of a
// session its DELETE ended, or one the gateway's Close ended (a gateway
// mounted on a server that goes on serving), got the go-sdk's bare
// "session not found", while one the gateway closed for its bounds was
// told why; right after the DELETE's answer, a session still being
// forgotten was the go-sdk's to answer. Both are answered 404 saying why
// and to initialize a new session (or, once the gateway is closed, that
// it opens none), from the DELETE's answer on.
func TestGatewayEndedSessionSaysWhy(t *testing.T) {
	f := startFleet(t)
	t.Run("deleted", func(t *testing.T) {
		g := newGateway(t, f)
		u := serveGatewayHTTP(t, g)
		for range 3 {
			id := openSession(t, u)
			if code, body := rawSessionRequest(t, http.MethodDelete, u, id, "2025-06-18", "", nil); code != http.StatusNoContent {
				t.Fatalf("DELETE: %d %q, want 204", code, body)
			}
			checkGone(t, u, id, "the client ended it (DELETE)")
		}
		if code, body := rawSessionRequest(t, http.MethodDelete, u, "no-such-session", "2025-06-18", "", nil); code != http.StatusNotFound || body != "session not found\n" {
			t.Errorf("a DELETE of an unknown session: %d %q; want the go-sdk's 404", code, body)
		}
	})
	t.Run("closed", func(t *testing.T) {
		g := newGateway(t, f)
		mux := http.NewServeMux()
		mux.Handle("/mcp", g)
		hs := httptest.NewServer(mux)
		t.Cleanup(hs.Close)
		u := hs.URL + "/mcp"
		id := openSession(t, u)
		waitTracked(t, g, 1)
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		for _, method := range []string{http.MethodGet, http.MethodPost} {
			// As checkGone, but a closed gateway opens no new session
			// (TestGatewayClosedSaysSo).
			if code, body := goneAnswer(t, http.DefaultClient, u, method, id); code != http.StatusNotFound ||
				body != "session not found: the gateway ended it as it shut down (Close); "+closedText+"\n" {
				t.Errorf("%s in the ended session: %d %q; want 404 saying the gateway ended it and is closed", method, code, body)
			}
		}
		if code, body := goneAnswer(t, http.DefaultClient, u, http.MethodPost, "no-such-session"); code != http.StatusNotFound || body != "session not found\n" {
			t.Errorf("a ping in an unknown session: %d %q; want the go-sdk's 404", code, body)
		}
	})
}
