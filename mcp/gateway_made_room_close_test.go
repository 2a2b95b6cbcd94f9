package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayCloseDuringMadeRoom: Close while a session the gateway ended
// to make room for another source's (MaxSessions) still waits for its
// call's result (its worker slow to answer the cancel) does not cut that
// wait short, whichever result comes first: the ended session's client
// gets its result, with GatewayMadeRoomText, the other session's client
// its own, with GatewayStoppedText (and so do the gateway's warnings for
// the calls), and Close returns once both are written. The bound on
// that wait is set beyond the test's guard, so only the results let
// Close return.
func TestGatewayCloseDuringMadeRoom(t *testing.T) {
	for _, first := range []string{"made room", "stopped"} {
		t.Run(first+" first", func(t *testing.T) {
			// The stubborn calls answer their cancel when the test lets
			// them, in the order they were cancelled: the session ended
			// to make room's, then the one Close interrupts.
			started, cancelled := make(chan struct{}, 2), make(chan struct{}, 2)
			answer := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
			var mu sync.Mutex
			var n int
			var once [2]sync.Once
			let := func(i int) { once[i].Do(func() { close(answer[i]) }) }
			srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
				if err := tk.Add(toolkit.Func("stubborn", "Answers a cancel only when the test lets it.", func(ctx context.Context, in struct{}) (string, error) {
					started <- struct{}{}
					<-ctx.Done()
					mu.Lock()
					i := n
					n++
					mu.Unlock()
					cancelled <- struct{}{}
					<-answer[min(i, 1)]
					return "", ctx.Err()
				})); err != nil {
					t.Fatal(err)
				}
			})
			var log lockedLog
			g := startGateway(t, srv, &GatewayOptions{MaxSessions: 2, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			g.resultWait = time.Hour
			u := serveGatewayHTTP(t, g)
			t.Cleanup(func() { let(0); let(1) }) // before the gateway's cleanups: a failed run ends
			wait := func(ch <-chan struct{}, what string) {
				t.Helper()
				select {
				case <-ch:
				case <-time.After(guardTimeout):
					t.Fatal(what)
				}
			}
			hog, alice := fromAddress(t, "127.0.0.1"), fromAddress(t, "127.0.0.2")
			outcomes := make(chan callOutcome, 2)
			for range 2 {
				c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, HTTPClient: hog})
				go func() {
					res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "stubborn", Arguments: map[string]any{}})
					outcomes <- callOutcome{res, err}
				}()
				wait(started, "the call never started")
			}
			waitTracked(t, g, 2)
			if code, _ := rawInitialize(t, alice, u); code != http.StatusOK {
				t.Fatalf("the newcomer's initialize: %d", code)
			}
			wait(cancelled, "the call of the session ended to make room was not cancelled")
			closed := make(chan error, 1)
			go func() { closed <- g.Close() }()
			wait(cancelled, "Close did not interrupt the other session's call")
			result := func(want string) {
				t.Helper()
				select {
				case o := <-outcomes:
					if o.err != nil || !o.res.IsError || len(o.res.Content) != 1 {
						t.Fatalf("the client whose call ends with %q got %+v, %v", want, o.res, o.err)
					}
					if got := o.res.Content[0].(*sdk.TextContent).Text; got != want {
						t.Fatalf("a client got %q, want %q", got, want)
					}
				case <-time.After(guardTimeout):
					t.Fatalf("the client whose call ends with %q got nothing", want)
				}
			}
			if first == "made room" {
				let(0)
				result(GatewayMadeRoomText)
				let(1)
				result(GatewayStoppedText)
			} else {
				let(1)
				result(GatewayStoppedText)
				// Close has closed the sessions it holds (the newcomer's
				// and the interrupted call's): the ended one's close is
				// its own, still waiting for its call's result.
				waitTracked(t, g, 0)
				let(0)
				result(GatewayMadeRoomText)
			}
			select {
			case err := <-closed:
				if err != nil {
					t.Errorf("Close: %v", err)
				}
			case <-time.After(guardTimeout):
				t.Fatal("Close has not returned once every call's result was written")
			}
			for _, text := range []string{GatewayMadeRoomText, GatewayStoppedText} {
				found := false
				for line := range strings.Lines(log.String()) {
					found = found || strings.Contains(line, "level=WARN") && strings.Contains(line, "tool=stubborn") && strings.Contains(line, cutText(text, 200))
				}
				if !found {
					t.Errorf("no warning for a call with %q:\n%s", text, log.String())
				}
			}
		})
	}
}
