package mcp

import (
	"context"
	"net"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayStopInterruptText: a call the gateway's own stop ends (its
// Interrupt, as toolctl mcp calls on a signal, or the end of the
// listener it came through) tells the model the gateway shut down, not
// that the user interrupted it.
func TestGatewayStopInterruptText(t *testing.T) {
	for _, how := range []string{"interrupt", "listener end"} {
		t.Run(how, func(t *testing.T) {
			f := startFleet(t)
			g := newGateway(t, f)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- g.ServeListener(ctx, l) }()
			t.Cleanup(func() { cancel(); <-done })
			c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: "http://" + l.Addr().String() + "/mcp", MaxRetries: -1})
			waitTracked(t, g, 1)
			unblock, outcome := startSlow(t, f, c)
			t.Cleanup(unblock)
			if how == "interrupt" {
				g.Interrupt()
			} else {
				cancel()
			}
			waitCancelled(t, f, guardTimeout, how)
			var o callOutcome
			select {
			case o = <-outcome:
			case <-time.After(guardTimeout):
				t.Fatal("the client got nothing for its call")
			}
			if o.err != nil {
				t.Fatalf("the client got %v, want the interrupted result", o.err)
			}
			if !o.res.IsError || len(o.res.Content) != 1 {
				t.Fatalf("the client got %+v, want one interrupted block", o.res)
			}
			if got := o.res.Content[0].(*sdk.TextContent).Text; got != GatewayStoppedText {
				t.Errorf("the client got %q, want %q", got, GatewayStoppedText)
			}
		})
	}
	if GatewayStoppedText == toolkit.InterruptedText || GatewayStoppedText == toolkit.DrainedText {
		t.Error("GatewayStoppedText is another stop's text")
	}
}

// TestStoppedFinalKeepsOutput: the gateway's text replaces only the
// interrupted notice the final ends with, the tool's output before it
// kept, and only when the gateway's stop, or its bounds closing the
// call's session, ended the call.
func TestStoppedFinalKeepsOutput(t *testing.T) {
	ended := func(cause error) context.Context {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(cause)
		return ctx
	}
	stopped := ended(errGatewayStopped)
	user, cancel := context.WithCancel(context.Background())
	cancel()
	text := func(s string) toolkit.Block { return toolkit.Block{Type: toolkit.BlockText, Text: s} }
	for _, tc := range []struct {
		name string
		ctx  context.Context
		in   []toolkit.Block
		want []toolkit.Block
	}{
		{"merged with output", stopped, []toolkit.Block{text("partial " + toolkit.InterruptedText)}, []toolkit.Block{text("partial " + GatewayStoppedText)}},
		{"after a data block", stopped, []toolkit.Block{{Type: toolkit.BlockData, Data: "aGk="}, text(toolkit.InterruptedText)}, []toolkit.Block{{Type: toolkit.BlockData, Data: "aGk="}, text(GatewayStoppedText)}},
		{"the user's cancel", user, []toolkit.Block{text(toolkit.InterruptedText)}, []toolkit.Block{text(toolkit.InterruptedText)}},
		{"the worker's stop", stopped, []toolkit.Block{text(toolkit.DrainedText)}, []toolkit.Block{text(toolkit.DrainedText)}},
		{"the session idle", ended(errSessionIdle), []toolkit.Block{text("partial " + toolkit.InterruptedText)}, []toolkit.Block{text("partial " + GatewayIdleClosedText)}},
		{"the session made room", ended(errSessionEvicted), []toolkit.Block{text("partial " + toolkit.InterruptedText)}, []toolkit.Block{text("partial " + GatewayMadeRoomText)}},
		{"a session's DELETE", ended(nil), []toolkit.Block{text(toolkit.InterruptedText)}, []toolkit.Block{text(toolkit.InterruptedText)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &toolkit.Response{State: toolkit.StateInterrupted, Code: toolkit.CodeInterrupted, Content: tc.in}
			got := stoppedFinal(tc.ctx, f).Content
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Type != tc.want[i].Type || got[i].Text != tc.want[i].Text || got[i].Data != tc.want[i].Data {
					t.Fatalf("got %+v, want %+v", got, tc.want)
				}
			}
		})
	}
}
