package mcp

import (
	"context"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestGatewayBearerTokens: with tokens the gateway admits only known
// bearers, and each calls as its own identity: its calls reach the
// workers on its identity's subjects, and its sessions' groups are its
// own.
func TestGatewayBearerTokens(t *testing.T) {
	f := startFleet(t)
	const aliceToken, bobToken = "alice-token-0123456789", "bob-token-0123456789ab"
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g := startGateway(t, f.srv, &GatewayOptions{Tokens: map[string]string{aliceToken: "alice", bobToken: "bob"}})
	url := serveGatewayHTTP(t, g)

	for _, token := range []string{"", "wrong-token-0123456789"} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", token, resp.StatusCode)
		}
	}

	calls, err := natstest.Connect(t, f.srv).SubscribeSync("tools.call.>")
	if err != nil {
		t.Fatal(err)
	}
	client := func(token string) *mcpClient {
		return connectClient(t, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}})
	}
	alice, bob := client(aliceToken), client(bobToken)
	if res := callTool(t, ctx, alice, "echo", map[string]any{"text": "hi"}, nil); resultText(res) != "hi" {
		t.Fatalf("alice's echo: %+v", res)
	}
	m, err := calls.NextMsg(guardTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "tools.call.echo.alice" || !strings.HasPrefix(m.Reply, "_INBOX.alice.") {
		t.Fatalf("alice's call went to %s, replies to %s", m.Subject, m.Reply)
	}

	// Alice turns a group on in her session; bob's session is unchanged.
	drain(alice.changed)
	if res := callTool(t, ctx, alice, "reset_tools", map[string]any{"extra": true}, nil); res.IsError {
		t.Fatalf("reset_tools: %+v", res)
	}
	waitChanged(t, alice, "after alice's reset_tools")
	if _, ok := listNames(t, alice)["shout"]; !ok {
		t.Error("alice does not see the group she turned on")
	}
	if _, ok := listNames(t, bob)["shout"]; ok {
		t.Error("bob sees alice's group")
	}

	// Alice's session does not answer bob's token.
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", alice.cs.ID())
	req.Header.Set("Authorization", "Bearer "+bobToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Error("bob's token was accepted on alice's session")
	}
}

func TestGatewayTokensBadInput(t *testing.T) {
	f := startFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	for _, tokens := range []map[string]string{
		{"short": "alice"},
		{"long-enough-token-0123": "not an identity"},
	} {
		if g, err := NewGateway(ctx, natstest.Connect(t, f.srv), &GatewayOptions{Tokens: tokens}); err == nil {
			g.Close()
			t.Errorf("tokens %v accepted", tokens)
		}
	}
}

// TestGatewayEmptyTokens: tokens given but none in them admit nobody
// (nil tokens mean no authentication).
func TestGatewayEmptyTokens(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{Tokens: map[string]string{}})
	req, _ := http.NewRequest(http.MethodPost, serveGatewayHTTP(t, g), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want 401", resp.StatusCode)
	}
}
