package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayFailedSubscribeAgainKeepsTheCount: a subscribe to a URI the
// session holds already leaves the URI counted, even one that could not
// have asked anything (here its context ended): the session's go-sdk
// server still remembers the first subscription, so uncounting it would
// let a client hold subscriptions past the bound. It asks nothing, so it
// is taken.
func TestGatewayFailedSubscribeAgainKeepsTheCount(t *testing.T) {
	f := mountedFleet(t, ServerConfig{Name: "fixture", Transport: TransportStdio, Command: goSDKEverythingServer(t), ServeResources: true})
	g := newGateway(t, f)
	waitMounted(t, g, "w-mounted")
	pc := pipeSession(t, g, "again", "2025-11-25")
	ctx := natstest.Ctx(t)
	const uri = "test://watched-resource"
	if err := pc.cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	var s *gatewaySession
	for _, x := range g.live() {
		s = x
	}
	if n := s.subscriptionCount(); n != 1 {
		t.Fatalf("after one subscribe the session holds %d subscriptions, want 1", n)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.subscribe(ended, &sdk.SubscribeRequest{Params: &sdk.SubscribeParams{URI: uri}}); err != nil {
		t.Fatalf("a subscribe again to a URI held, its context ended: %v", err)
	}
	if n := s.subscriptionCount(); n != 1 {
		t.Fatalf("after a failed subscribe again to a URI held, the session holds %d subscriptions, want 1", n)
	}
}
