package mcp

import (
	"context"
	"io"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGatewayServeEndInFlight: when Serve's ctx ends with a call in
// flight, the call is cancelled on the worker (as the end of
// ServeListener's ctx cancels its sessions' calls), its client hears the
// call's end, and Serve returns (it waited for the call for ever).
func TestGatewayServeEndInFlight(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			f := startFleet(t)
			g := newGateway(t, f)
			toServer, fromClient := io.Pipe()
			toClient, fromServer := io.Pipe()
			t.Cleanup(func() { fromClient.Close(); fromServer.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- g.Serve(ctx, &sdk.IOTransport{Reader: toServer, Writer: fromServer}, "serve-end") }()
			var opts *sdk.ClientSessionOptions
			if version != "" {
				opts = &sdk.ClientSessionOptions{ProtocolVersion: version}
			}
			c := &mcpClient{}
			cctx, ccancel := context.WithTimeout(context.Background(), guardTimeout)
			defer ccancel()
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "serve-end", Version: "1"}, nil).Connect(cctx,
				&sdk.IOTransport{Reader: toClient, Writer: fromClient}, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			c.cs = cs
			waitTracked(t, g, 1)
			unblock, outcome := startSlow(t, f, c)
			t.Cleanup(unblock)
			cancel()
			waitCancelled(t, f, guardTimeout, "after Serve's ctx ended")
			select {
			case o := <-outcome:
				// The session closes with ctx: an error (the connection
				// closed) or the interrupted result, never a success.
				if o.err == nil && !o.res.IsError {
					t.Errorf("the client got %+v; want an error or the interrupted result", o.res)
				}
			case <-time.After(guardTimeout):
				t.Error("the client got nothing for its call")
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(guardTimeout):
				unblock()
				t.Errorf("Serve has not returned %v after its ctx ended", guardTimeout)
			}
		})
	}
}
