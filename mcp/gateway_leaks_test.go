package mcp

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayEndedSessionsHoldNoTimer opens HTTP sessions that call a
// tool and end (the client's DELETE): once their requests are done, no
// ended session keeps a timer armed for the session timeout.
func TestGatewayEndedSessionsHoldNoTimer(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	url := serveGatewayHTTP(t, g)
	var ended []*gatewaySession
	for range 20 {
		c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
		waitTracked(t, g, 1)
		s := g.sessionByID(c.cs.ID())
		if s == nil {
			t.Fatal("the session is not tracked")
		}
		ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
		callTool(t, ctx, c, "echo", map[string]any{"text": "hi"}, nil)
		cancel()
		c.cs.Close()
		waitTracked(t, g, 0)
		ended = append(ended, s)
	}
	for _, s := range ended {
		// The DELETE's request ends a moment after its answer.
		for deadline := time.Now().Add(guardTimeout); ; time.Sleep(10 * time.Millisecond) {
			s.idleMu.Lock()
			active, idle := s.active, s.idle
			s.idleMu.Unlock()
			if active == 0 {
				if idle != nil && idle.Stop() {
					t.Fatalf("session %s ended with its idle timer armed", s.id)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("session %s still has %d requests", s.id, active)
			}
		}
	}
}
