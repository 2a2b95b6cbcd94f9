package mcp

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// resumeWatch tells of each request resuming a stream (Last-Event-ID)
// whose response has begun: the gateway holds that stream by then.
type resumeWatch struct {
	resumed chan string // the Last-Event-ID
}

func (rw *resumeWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if id := r.Header.Get("Last-Event-ID"); err == nil && id != "" && resp.StatusCode == http.StatusOK {
		select {
		case rw.resumed <- id:
		default:
		}
	}
	return resp, err
}

// TestGatewayEndResumedStream: a stream a client resumed with
// Last-Event-ID holds ServeListener's shutdown (and Close) only while it
// may still carry a call's result. A call's stream resumed (StreamPoll
// closed it) ends once the call's result is on it, so the shutdown after
// it waits for nothing; the session's own event stream resumed (a
// Last-Event-ID "_<n>", as a go-sdk client sends when that stream broke
// after an event) carries no call, and ends with the shutdown as a GET
// without Last-Event-ID does: it held the shutdown (and Close) for their
// whole bound, 5 s, every time. The bound is set beyond the test's guard
// here, so a gateway that waits for such a stream fails the guard.
func TestGatewayEndResumedStream(t *testing.T) {
	release := make(chan struct{})
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		// ticker reports progress until released, so that a resumed
		// stream has events to begin with while the call still runs.
		if err := tk.Add(toolkit.Stream("ticker", "Tick until released.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
			for i := 1; ; i++ {
				select {
				case <-release:
					return w.Write(toolkit.Text("released"))
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(5 * time.Millisecond):
				}
				if err := w.Progress(toolkit.Progress{Progress: float64(i)}); err != nil {
					return err
				}
			}
		})); err != nil {
			t.Fatal(err)
		}
	})
	for _, stream := range []string{"call", "session", "session, Close"} {
		t.Run(stream, func(t *testing.T) {
			g := startGateway(t, srv, &GatewayOptions{StreamPoll: time.Millisecond})
			g.resultWait = time.Hour
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			u := "http://" + l.Addr().String() + "/mcp"
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			served := make(chan error, 1)
			go func() { served <- g.ServeListener(ctx, l) }()
			rw := &resumeWatch{resumed: make(chan string, 8)}
			cctx := natstest.Ctx(t)
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "resume-test", Version: "1"}, nil).Connect(cctx,
				&sdk.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: rw}, DisableStandaloneSSE: true},
				&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			waitTracked(t, g, 1)

			var held *http.Response // the session's event stream, resumed
			if stream == "call" {
				outcome := make(chan callOutcome, 1)
				go func() {
					p := &sdk.CallToolParams{Name: "ticker", Arguments: map[string]any{}}
					p.SetProgressToken("tick")
					res, err := cs.CallTool(cctx, p)
					outcome <- callOutcome{res, err}
				}()
				select {
				case id := <-rw.resumed:
					t.Logf("the client resumed the call's stream from %s", id)
				case <-time.After(guardTimeout):
					t.Fatal("the client never resumed the call's stream")
				}
				close(release)
				select {
				case o := <-outcome:
					if o.err != nil || resultText(o.res) != "released" {
						t.Fatalf("the call ended %+v, %v", o.res, o.err)
					}
				case <-time.After(guardTimeout):
					t.Fatal("the call's result never came")
				}
			} else {
				req, _ := http.NewRequest(http.MethodGet, u, nil)
				req.Header.Set("Mcp-Session-Id", cs.ID())
				req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
				req.Header.Set("Accept", "text/event-stream")
				req.Header.Set("Last-Event-ID", "_0")
				if held, err = rw.RoundTrip(req); err != nil {
					t.Fatal(err)
				}
				defer held.Body.Close()
				if held.StatusCode != http.StatusOK {
					t.Fatalf("resuming the session's event stream: %s", held.Status)
				}
			}

			var ended chan error
			what := "ServeListener"
			if stream == "session, Close" {
				what = "Gateway.Close"
				ended = make(chan error, 1)
				go func() { ended <- g.Close() }()
			} else {
				ended = served
				cancel()
			}
			select {
			case err := <-ended:
				if err != nil {
					t.Errorf("%s: %v", what, err)
				}
			case <-time.After(guardTimeout):
				t.Errorf("%s has not returned %v after it was asked to stop, with a resumed stream open that carries no call's result: it waits for that stream (for ever here, 5 s by default)", what, guardTimeout)
				if held != nil {
					held.Body.Close() // the stream's end lets it return
				}
				<-ended
			}
			if ended != served {
				cancel()
				<-served
			}
		})
	}
}
