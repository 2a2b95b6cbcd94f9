package mcp

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayMadeRoomText: a call in flight in a session the gateway
// closes to make room for another source's (MaxSessions) ends, for its
// client, with a result saying so; its POST's stream ended without one,
// a transport error to the client. The gateway's warning for the call
// says so too, not that the user interrupted it.
func TestGatewayMadeRoomText(t *testing.T) {
	f := startFleet(t)
	var log lockedLog
	g := startGateway(t, f.srv, &GatewayOptions{MaxSessions: 2, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	u := serveGatewayHTTP(t, g)
	hog, alice := fromAddress(t, "127.0.0.1"), fromAddress(t, "127.0.0.2")
	// Both of the hog's sessions run a call: one of them is ended. Its
	// client reconnects its streams as clients do by default: one that
	// does not takes the end of its event stream, which the session's
	// close ends, for the end of its session at once, and may act on it
	// before it has read the result already sent on the call's stream.
	var outcomes []<-chan callOutcome
	for range 2 {
		c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: hog})
		unblock, outcome := startSlow(t, f, c)
		t.Cleanup(unblock)
		outcomes = append(outcomes, outcome)
	}
	waitTracked(t, g, 2)
	if code, _ := rawInitialize(t, alice, u); code != http.StatusOK {
		t.Fatalf("the newcomer's initialize: %d", code)
	}
	waitCancelled(t, f, guardTimeout, "the session ended to make room")
	var o callOutcome
	select {
	case o = <-outcomes[0]:
	case o = <-outcomes[1]:
	case <-time.After(guardTimeout):
		t.Fatal("neither client got anything for its call")
	}
	checkClosedResult(t, o, GatewayMadeRoomText)
	checkClosedLog(t, &log, GatewayMadeRoomText)
}

// TestGatewayIdleCloseText: a call in flight in a session the gateway
// closes for having no request open for its SessionTimeout (a client
// gone mid-call, whose stream could have been resumed) ends with a
// result saying so, and the gateway's warning for the call says so, not
// that the user interrupted it.
func TestGatewayIdleCloseText(t *testing.T) {
	f := startFleet(t)
	var log lockedLog
	g, d := slowCallOverCuttable(t, f, &GatewayOptions{SessionTimeout: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	d.die()
	waitCancelled(t, f, guardTimeout, "client gone, session timeout 500ms")
	waitTracked(t, g, 0)
	checkClosedLog(t, &log, GatewayIdleClosedText)
}

// checkClosedResult checks that a client got the result of a call its
// session's close ended, with text.
func checkClosedResult(t *testing.T, o callOutcome, text string) {
	t.Helper()
	if o.err != nil {
		t.Fatalf("the client got %v, want the interrupted result", o.err)
	}
	if !o.res.IsError || len(o.res.Content) != 1 {
		t.Fatalf("the client got %+v, want one interrupted block", o.res)
	}
	if got := o.res.Content[0].(*sdk.TextContent).Text; got != text {
		t.Errorf("the client got %q, want %q", got, text)
	}
}

// checkClosedLog checks the gateway's warning for a call its session's
// close ended: it carries text, not the user's interrupt.
func checkClosedLog(t *testing.T, log *lockedLog, text string) {
	t.Helper()
	for deadline := time.Now().Add(guardTimeout); ; time.Sleep(10 * time.Millisecond) {
		for line := range strings.Lines(log.String()) {
			if !strings.Contains(line, `msg="mcp: gateway: tool call"`) || !strings.Contains(line, "tool=slow") {
				continue
			}
			if !strings.Contains(line, "level=WARN") || !strings.Contains(line, cutText(text, 200)) ||
				strings.Contains(line, toolkit.InterruptedText) {
				t.Errorf("the call's log line is\n%s\nwant a warning with %q", line, text)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the call:\n%s", log.String())
		}
	}
}
