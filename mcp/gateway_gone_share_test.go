package mcp

import (
	"fmt"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayGoneShare: the ended sessions the gateway remembers (to tell
// a client coming back why its session ended) were one list of the last
// maxGone across clients, so one client opening and deleting sessions in
// a loop pushed every other client's out, and they got the go-sdk's bare
// "session not found". Each source (as MaxSessions counts them: the
// token's identity, else the peer's address) now has a fair share: at the
// bound, the oldest record of the source holding the most is forgotten,
// so a client's churn forgets its own records first, and memory stays
// bounded however many sessions end.
func TestGatewayGoneShare(t *testing.T) {
	t.Run("one flooder", func(t *testing.T) {
		f := startFleet(t)
		g := newGateway(t, f)
		u := serveGatewayHTTP(t, g)
		alice, hog := fromAddress(t, "127.0.0.2"), fromAddress(t, "127.0.0.1")
		// Alice's session ends by her DELETE, over HTTP; the flooder's
		// too, then maxGone more of its sessions end (as its loop of
		// initialize and DELETE would end them, without the time that
		// takes).
		cs := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: alice, DisableStandaloneSSE: true})
		aliceID := cs.cs.ID()
		waitTracked(t, g, 1)
		cs.cs.Close()
		waitTracked(t, g, 0)
		hc := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: hog, DisableStandaloneSSE: true})
		hogID := hc.cs.ID()
		waitTracked(t, g, 1)
		hc.cs.Close()
		waitTracked(t, g, 0)
		g.mu.Lock()
		for i := range 3 * maxGone {
			g.rememberGoneLocked(&gatewaySession{id: fmt.Sprint("hog", i), identity: g.copts.Identity, source: "address 127.0.0.1"}, errSessionDeleted)
		}
		n := len(g.gone)
		g.mu.Unlock()
		if n > maxGone {
			t.Errorf("%d ended sessions remembered, more than %d", n, maxGone)
		}
		checkGone(t, u, aliceID, "the client ended it (DELETE)")
		if code, body := goneAnswer(t, http.DefaultClient, u, http.MethodPost, hogID); code != http.StatusNotFound || body != "session not found\n" {
			t.Errorf("the flooder's first session: %d %q; want it forgotten (the go-sdk's 404)", code, body)
		}
	})
	t.Run("many sources", func(t *testing.T) {
		g := &Gateway{}
		g.mu.Lock()
		// A quiet client, then two flooding, then a flood from as many
		// sources as the bound holds records.
		g.rememberGoneLocked(&gatewaySession{id: "quiet", source: "address 10.0.0.1"}, errSessionIdle)
		for i := range 4 * maxGone {
			g.rememberGoneLocked(&gatewaySession{id: fmt.Sprint("a", i), source: "address 10.0.0.2"}, errSessionDeleted)
			g.rememberGoneLocked(&gatewaySession{id: fmt.Sprint("b", i), source: "identity b"}, errSessionDeleted)
		}
		n := len(g.gone)
		g.mu.Unlock()
		if n > maxGone {
			t.Errorf("%d ended sessions remembered, more than %d", n, maxGone)
		}
		for id, want := range map[string]bool{"quiet": true, "a0": false, "b0": false, fmt.Sprint("a", 4*maxGone-1): true, fmt.Sprint("b", 4*maxGone-1): true} {
			if got := g.goneText(id, "") != ""; got != want {
				t.Errorf("session %s remembered: %v, want %v", id, got, want)
			}
		}
		g.mu.Lock()
		for i := range 2 * maxGone {
			g.rememberGoneLocked(&gatewaySession{id: fmt.Sprint("c", i), source: fmt.Sprint("address 10.1.", i/256, ".", i%256)}, errSessionDeleted)
		}
		n = len(g.gone)
		g.mu.Unlock()
		if n > maxGone {
			t.Errorf("%d ended sessions remembered after a flood from many sources, more than %d", n, maxGone)
		}
		if got := g.goneText(fmt.Sprint("c", 2*maxGone-1), ""); got == "" {
			t.Error("the last ended session is not remembered")
		}
	})
}
