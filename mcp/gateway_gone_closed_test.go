package mcp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayClosedSaysSo: after the gateway's Close (mounted on a server
// that goes on serving), a client coming back with its session's id was
// told to initialize a new session, and the gateway answered that
// initialize 200 with a JSON-RPC error and the id of a session it did not
// hold (400 for a token's identity it had not served yet). A session's
// request is answered 404 still (the session ended: a Streamable HTTP
// client drops it, the go-sdk's with ErrSessionMissing), saying that the
// gateway is closed and opens no new sessions, for a session Close ended
// as for one that ended before; an initialize is answered 503 (which a
// client takes for a passing refusal, to try again later, the go-sdk's
// keeping no session) saying the gateway is closed, and opens none.
func TestGatewayClosedSaysSo(t *testing.T) {
	f := startFleet(t)
	const aliceToken, bobToken = "alice-token-0123456789", "bob-token-0123456789ab"
	for _, tc := range []struct {
		name         string
		opts         *GatewayOptions
		opener, late *http.Client
	}{
		{"no tokens", nil, http.DefaultClient, http.DefaultClient},
		{"tokens", &GatewayOptions{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}},
			&http.Client{Transport: bearer{aliceToken, http.DefaultTransport}}, &http.Client{Transport: bearer{bobToken, http.DefaultTransport}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGateway(t, f.srv, tc.opts)
			mux := http.NewServeMux()
			mux.Handle("/mcp", g)
			hs := httptest.NewServer(mux)
			t.Cleanup(hs.Close)
			u := hs.URL + "/mcp"
			code, deleted := rawInitialize(t, tc.opener, u)
			if code != http.StatusOK || deleted == "" {
				t.Fatalf("initialize: %d, session %q", code, deleted)
			}
			req, _ := http.NewRequest(http.MethodDelete, u, nil)
			req.Header.Set("Mcp-Session-Id", deleted)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			resp, err := tc.opener.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				t.Fatalf("DELETE: %d, want 204", resp.StatusCode)
			}
			code, raw := rawInitialize(t, tc.opener, u)
			if code != http.StatusOK || raw == "" {
				t.Fatalf("initialize: %d, session %q", code, raw)
			}
			c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: tc.opener, DisableStandaloneSSE: true})
			waitTracked(t, g, 2)
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			for id, why := range map[string]string{raw: "the gateway ended it as it shut down (Close)", deleted: "the client ended it (DELETE)"} {
				for _, method := range []string{http.MethodGet, http.MethodPost} {
					code, body := goneAnswer(t, tc.opener, u, method, id)
					if code != http.StatusNotFound || !strings.Contains(body, why) || !strings.Contains(body, "the gateway is closed and opens no new sessions") ||
						strings.Contains(body, "initialize a new session") {
						t.Errorf("%s in a session ended (%s) before or by Close: %d %q; want 404 saying so, and that the gateway is closed and opens no new sessions",
							method, why, code, body)
					}
				}
			}
			if _, err := c.cs.ListTools(natstest.Ctx(t), nil); !errors.Is(err, sdk.ErrSessionMissing) {
				t.Errorf("a go-sdk client's request after Close: %v; want sdk.ErrSessionMissing", err)
			}
			for who, hc := range map[string]*http.Client{"the same client": tc.opener, "another client": tc.late} {
				req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "the gateway is closed and opens no new sessions") || resp.Header.Get("Mcp-Session-Id") != "" {
					t.Errorf("an initialize of %s after Close: %d %q (session %q); want 503 saying the gateway is closed, and no session",
						who, resp.StatusCode, b, resp.Header.Get("Mcp-Session-Id"))
				}
			}
			if g.Sessions() != 0 {
				t.Errorf("%d sessions open after Close", g.Sessions())
			}
		})
	}
}
