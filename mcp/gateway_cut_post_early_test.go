package mcp

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayCutPostBeforeHandled: a call whose POST's connection is cut
// before the gateway's handler of it has looked for the POST (a loaded
// gateway: the go-sdk hands the request over and waits for the POST's
// end, and the handler runs later) is cancelled as one cut while it runs
// is (TestGatewayCutPostInFlight). The POST was no longer noted once it
// had ended, so the call was sent and ran for nobody, until the session
// had been idle for the session timeout.
func TestGatewayCutPostBeforeHandled(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{StreamBuffer: -1})
	d := &cutConns{}
	hc := &http.Client{Transport: &http.Transport{DialContext: d.dial}}
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g), HTTPClient: hc, MaxRetries: -1})
	waitTracked(t, g, 1)
	s := g.live()[0]
	// Outermost: holds the tools/call until its POST is over, then lets
	// the gateway's handler have it.
	holding := make(chan struct{}, 1)
	handled := make(chan struct{})
	s.srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			holding <- struct{}{}
			token := req.GetExtra().Header.Get(headerPost)
			for deadline := time.Now().Add(guardTimeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				s.postMu.Lock()
				gone := s.posts[token] == nil
				s.postMu.Unlock()
				if gone {
					break
				}
			}
			defer close(handled)
			return next(ctx, method, req)
		}
	})
	go c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "slow", Arguments: map[string]any{}})
	select {
	case <-holding:
	case <-time.After(guardTimeout):
		t.Fatal("the call never reached the gateway")
	}
	d.die()
	// The worker ends a call on its own once its caller's reply subject
	// is gone (toolkit.ErrCallerGone): that is no cancel.
	select {
	case <-handled: // ended, without reaching the worker or cancelled on it
		if cause := f.lastCause(); errors.Is(cause, toolkit.ErrCallerGone) {
			t.Errorf("the call's POST cut before its handler ran: the worker's call ended only as its caller was gone (%v): no cancel reached it", cause)
		}
	case <-f.cancelled:
		if cause := f.lastCause(); errors.Is(cause, toolkit.ErrCallerGone) {
			t.Errorf("the call's POST cut before its handler ran: the worker's call ended only as its caller was gone (%v): no cancel reached it", cause)
		} else {
			t.Logf("the worker saw %v", cause)
		}
	case <-time.After(guardTimeout):
		t.Errorf("the call's POST cut before its handler ran, no stream to resume: %v later the call still runs (no cancel reached the worker)", guardTimeout)
		g.Close() // ends the call, so that the test ends
	}
}
