package mcp

import (
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewaySessionSubscriptionsBounded: a client subscribing to ever new
// resource URIs (skill: ones, which the gateway takes without asking a
// worker) is refused past maxSessionSubscriptions with an error naming the
// bound, not remembered without end by its session's server; after it
// unsubscribes from one, it may subscribe to another, and a URI it holds
// is taken again.
func TestGatewaySessionSubscriptionsBounded(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	pc := pipeSession(t, g, "flood", "2025-11-25") // resources/subscribe
	ctx := natstest.Ctx(t)
	uri := func(i int) string { return fmt.Sprintf("skill://s%d/SKILL.md", i) }
	for i := range maxSessionSubscriptions {
		if err := pc.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri(i)}); err != nil {
			t.Fatalf("subscription %d of %d: %v", i+1, maxSessionSubscriptions, err)
		}
	}
	for i := maxSessionSubscriptions; i < maxSessionSubscriptions+100; i++ {
		err := pc.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri(i)})
		if err == nil {
			t.Fatalf("subscription %d taken past the bound of %d", i+1, maxSessionSubscriptions)
		}
		if !strings.Contains(err.Error(), fmt.Sprint(maxSessionSubscriptions)) {
			t.Fatalf("subscription past the bound: %v; want the bound named", err)
		}
	}
	if err := pc.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri(0)}); err != nil {
		t.Fatalf("subscribing again to a URI held: %v", err)
	}
	if err := pc.cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri(0)}); err != nil {
		t.Fatal(err)
	}
	if err := pc.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri(maxSessionSubscriptions)}); err != nil {
		t.Fatalf("subscribing after an unsubscribe: %v", err)
	}
	var s *gatewaySession
	for _, x := range g.live() {
		s = x
	}
	if n := s.subscriptionCount(); n != maxSessionSubscriptions {
		t.Fatalf("the session holds %d subscriptions, want %d", n, maxSessionSubscriptions)
	}
}
