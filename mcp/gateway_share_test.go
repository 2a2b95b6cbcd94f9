package mcp

import (
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// fromAddress is an HTTP client whose connections come from the loopback
// address ip; the test is skipped where the system cannot bind it.
func fromAddress(t *testing.T, ip string) *http.Client {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Skipf("cannot use %s as a source address: %v", ip, err)
	}
	l.Close()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = d.DialContext
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// rawInitialize opens a session with one initialize, as a client that
// never ends its sessions does, and returns the status and session id.
func rawInitialize(t *testing.T, hc *http.Client, u string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"hog","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
}

// rawPing sends a ping in session id and returns the status.
func rawPing(t *testing.T, hc *http.Client, u, id string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// One client opening GatewayOptions.MaxSessions sessions and never ending
// them locked every other client out (503) until they expired. A source
// (the peer's address, or the bearer token's identity with Tokens) now
// takes a fair share: a newcomer ends the least recently used session of
// the source holding the most, and the source holding the most is still
// refused.
func TestGatewayMaxSessionsFairShare(t *testing.T) {
	const hogToken, aliceToken = "hog-token-0123456789ab", "alice-token-0123456789"
	for _, tc := range []struct {
		name       string
		tokens     map[string]string
		hog, alice func(t *testing.T) *http.Client
	}{
		{
			name: "by address",
			hog:  func(t *testing.T) *http.Client { return fromAddress(t, "127.0.0.1") },
			alice: func(t *testing.T) *http.Client {
				return fromAddress(t, "127.0.0.2")
			},
		},
		{
			name:   "by identity",
			tokens: map[string]string{hogToken: "hog", aliceToken: "alice"},
			hog: func(t *testing.T) *http.Client {
				return &http.Client{Transport: bearer{hogToken, http.DefaultTransport}}
			},
			alice: func(t *testing.T) *http.Client {
				return &http.Client{Transport: bearer{aliceToken, http.DefaultTransport}}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const max = 4
			f := startFleet(t)
			ctx := testCtx(t)
			g := startGateway(t, f.srv, &GatewayOptions{MaxSessions: max, Tokens: tc.tokens})
			u := serveGatewayHTTP(t, g)
			hog, alice := tc.hog(t), tc.alice(t)

			var hogs []string
			for range max {
				code, id := rawInitialize(t, hog, u)
				if code != http.StatusOK || id == "" {
					t.Fatalf("the hog's initialize: %d", code)
				}
				hogs = append(hogs, id)
			}
			// The hog's sessions but the first are used since.
			for _, id := range hogs[1:] {
				if code := rawPing(t, hog, u, id); code != http.StatusOK {
					t.Fatalf("a ping of the hog's session: %d", code)
				}
			}
			if code, _ := rawInitialize(t, hog, u); code != http.StatusServiceUnavailable {
				t.Fatalf("the hog's initialize past its %d sessions: %d, want 503", max, code)
			}

			c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: alice})
			if res := callTool(t, ctx, c, "echo", map[string]any{"text": "room"}, nil); resultText(res) != "room" {
				t.Fatalf("the newcomer's echo: %+v", res)
			}
			natstest.WaitFor(t, "the hog's least recently used session to end", func() bool {
				return rawPing(t, hog, u, hogs[0]) == http.StatusNotFound
			})
			for _, id := range hogs[1:] {
				if code := rawPing(t, hog, u, id); code != http.StatusOK {
					t.Errorf("the hog's session used since: %d, want it open", code)
				}
			}
			if n := g.Sessions(); n != max {
				t.Errorf("%d sessions, want %d", n, max)
			}
			// 3 against 1: the hog is still refused.
			if code, _ := rawInitialize(t, hog, u); code != http.StatusServiceUnavailable {
				t.Errorf("the hog's initialize with 3 sessions to the newcomer's 1: %d, want 503", code)
			}
			if res := callTool(t, ctx, c, "echo", map[string]any{"text": "still"}, nil); resultText(res) != "still" {
				t.Errorf("the newcomer's echo after the hog's retry: %+v", res)
			}
		})
	}
}

// A burst of initializes from a newcomer took the hog's sessions one for
// one before the newcomer's own sessions were counted: it could end them
// all. An admitted initialize counts toward its source from then on, so
// the burst gets its share (half of 4) and no more.
func TestGatewayMaxSessionsBurst(t *testing.T) {
	const hogToken, aliceToken, max = "hog-token-0123456789ab", "alice-token-0123456789", 4
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxSessions: max,
		Tokens: map[string]string{hogToken: "hog", aliceToken: "alice"}})
	u := serveGatewayHTTP(t, g)
	hog := &http.Client{Transport: bearer{hogToken, http.DefaultTransport}}
	alice := &http.Client{Transport: bearer{aliceToken, http.DefaultTransport}}
	var hogs []string
	for range max {
		code, id := rawInitialize(t, hog, u)
		if code != http.StatusOK {
			t.Fatalf("the hog's initialize: %d", code)
		}
		hogs = append(hogs, id)
	}
	codes := make(chan int, max)
	var wg sync.WaitGroup
	for range max {
		wg.Go(func() {
			code, _ := rawInitialize(t, alice, u)
			codes <- code
		})
	}
	wg.Wait()
	close(codes)
	opened := 0
	for code := range codes {
		switch code {
		case http.StatusOK:
			opened++
		case http.StatusServiceUnavailable:
		default:
			t.Errorf("a newcomer's initialize: %d", code)
		}
	}
	if opened != max/2 {
		t.Fatalf("a burst of %d initializes against the hog's %d sessions opened %d, want %d", max, max, opened, max/2)
	}
	natstest.WaitFor(t, "the hog's ended sessions to close", func() bool {
		open := 0
		for _, id := range hogs {
			if rawPing(t, hog, u, id) == http.StatusOK {
				open++
			}
		}
		return open == max/2
	})
	if n := g.Sessions(); n != max {
		t.Errorf("%d sessions, want %d", n, max)
	}
}

// A peer's source is its IPv4 address or its IPv6 /64 (one host's
// network, commonly); an IPv4-mapped peer is its IPv4 address.
func TestSourceOfAddress(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:4711", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:4711", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:4711", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:80", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"not an address", "not an address"},
	} {
		if got := addressSource(tc.remote); got != tc.want {
			t.Errorf("addressSource(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}
