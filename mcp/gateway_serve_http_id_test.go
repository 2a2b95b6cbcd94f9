package mcp

import (
	"context"
	"io"
	"net/http"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayHTTPCannotEndServedSession: an HTTP request naming a
// session served by Serve (stdio names its session, often guessably:
// "my-agent") in its Mcp-Session-Id does not act on that session: a
// DELETE of it left every later call of the stdio session interrupted.
func TestGatewayHTTPCannotEndServedSession(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	url := serveGatewayHTTP(t, g)
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Serve(ctx, &sdk.IOTransport{Reader: toServer, Writer: fromServer}, "my-agent") }()
	t.Cleanup(func() {
		cancel()
		fromClient.Close()
		<-done
	})
	cctx, ccancel := context.WithTimeout(context.Background(), guardTimeout)
	defer ccancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "stdio", Version: "1"}, nil).Connect(cctx,
		&sdk.IOTransport{Reader: toClient, Writer: fromClient}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c := &mcpClient{cs: cs}
	waitTracked(t, g, 1)
	if res := callTool(t, cctx, c, "echo", map[string]any{"text": "before"}, nil); res.IsError {
		t.Fatalf("echo before: %s", resultText(res))
	}

	req, _ := http.NewRequestWithContext(cctx, http.MethodDelete, url, nil)
	req.Header.Set("Mcp-Session-Id", "my-agent")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	t.Logf("DELETE of the stdio session's name over HTTP: %d", resp.StatusCode)

	for _, s := range g.live() {
		if s.ctx.Err() != nil {
			t.Errorf("the session %q was ended by an HTTP DELETE naming it", s.id)
		}
	}
	// steps runs long enough (10 × 20ms) for an ended session's cancel to
	// reach it.
	if res := callTool(t, cctx, c, "steps", map[string]any{"n": 10}, nil); res.IsError || resultText(res) != "done" {
		t.Errorf("steps after a stranger's DELETE: %q, %v (code %v)", resultText(res), res.IsError, res.Meta[GatewayMetaCode])
	}
}
