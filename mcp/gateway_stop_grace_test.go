package mcp

import (
	"context"
	"net"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayServeListenerStopGrace: with StopGrace, the end of
// ServeListener's ctx closes the listener at once but leaves the calls in
// flight running (not interrupted with GatewayStoppedText): here the
// call runs until it is cancelled on the bus, after which ServeListener
// returns.
func TestGatewayServeListenerStopGrace(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{StopGrace: 10 * time.Minute})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.ServeListener(ctx, l) }()
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1})
	waitTracked(t, g, 1)
	unblock, outcome := startSlow(t, f, c)
	t.Cleanup(unblock)
	cancel()
	natstest.WaitFor(t, "the listener to refuse connections", func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err != nil
	})
	select {
	case o := <-outcome:
		t.Fatalf("the call ended when ServeListener's ctx did, within StopGrace: %+v %v", o.res, o.err)
	default:
	}
	unblock()
	select {
	case o := <-outcome:
		if o.err != nil || len(o.res.Content) != 1 || o.res.Content[0].(*sdk.TextContent).Text == GatewayStoppedText {
			t.Errorf("the client got %+v, %v; want the result of its call cancelled on the bus, not the gateway's stop", o.res, o.err)
		}
	case <-time.After(guardTimeout):
		t.Fatal("the client got nothing for its call")
	}
	select {
	case <-done:
	case <-time.After(guardTimeout):
		t.Fatal("ServeListener did not return once its calls were answered")
	}
}
