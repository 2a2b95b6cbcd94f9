package mcp

import (
	"context"
	"testing"
)

// The clients the gateway makes for its bearers' identities list with
// the gateway's own view of the fleet. The gateway refreshes its sessions
// when that view changes; a session of an identity whose client had a
// view of its own was refreshed from that one, which may not have seen
// the change yet (a worker joining: the session kept listing without its
// tools until the next change), and each identity's view held every
// worker's announcements again.
func TestGatewayIdentitiesShareTheFleet(t *testing.T) {
	f := startFleet(t)
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	g := startGateway(t, f.srv, &GatewayOptions{Tokens: map[string]string{"alice-token-0123456789": "alice"}})
	c, err := g.clientFor("alice")
	if err != nil {
		t.Fatal(err)
	}
	fl, err := c.Fleet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fl != g.Fleet() {
		t.Fatal("alice's client lists with a view of the fleet of its own, not the gateway's, whose changes refresh the sessions")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if len(g.Fleet().Tools()) == 0 {
		t.Fatal("closing an identity's client closed the gateway's view of the fleet")
	}
}
