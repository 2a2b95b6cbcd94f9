package mcp

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayServeListenerStopGrace: with StopGrace, the end of
// ServeListener's ctx refuses new sessions at once (503) but leaves the
// calls in flight running (not interrupted with GatewayStoppedText): here the
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
	waitNewSessionRefused(t, "http://"+addr+"/mcp")
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

// waitNewSessionRefused waits until the gateway at u answers a new
// session's initialize 503, as it does in its stop grace.
func waitNewSessionRefused(t *testing.T, u string) {
	t.Helper()
	natstest.WaitFor(t, "a new session to be refused", func() bool {
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
}

// heldResume holds each request resuming a stream (Last-Event-ID) until
// release is closed, telling of it on resuming first and of its
// response's status (0: none) on resumed.
type heldResume struct {
	resuming chan string // the Last-Event-ID
	release  chan struct{}
	resumed  chan int
}

func (h *heldResume) RoundTrip(r *http.Request) (*http.Response, error) {
	id := r.Header.Get("Last-Event-ID")
	if id == "" {
		return http.DefaultTransport.RoundTrip(r)
	}
	select {
	case h.resuming <- id:
	default:
	}
	<-h.release
	resp, err := http.DefaultTransport.RoundTrip(r)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	select {
	case h.resumed <- status:
	default:
	}
	return resp, err
}

// TestGatewayStopGracePolledCall: a call whose response stream StreamPoll
// closed is in flight until its client has resumed the stream: the stop
// grace waits for it, the resume during the grace is served (a new
// session is not), and the client gets its call's own result. The grace
// ended at once (no request carried the call), interrupting the call, and
// the listener, closed, refused the resume.
func TestGatewayStopGracePolledCall(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{StopGrace: 10 * time.Minute, StreamPoll: 50 * time.Millisecond})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String() + "/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.ServeListener(ctx, l) }()
	h := &heldResume{resuming: make(chan string, 8), release: make(chan struct{}), resumed: make(chan int, 8)}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "grace-test", Version: "1"}, nil).Connect(natstest.Ctx(t),
		&sdk.StreamableClientTransport{Endpoint: u, HTTPClient: &http.Client{Transport: h}, DisableStandaloneSSE: true},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	waitTracked(t, g, 1)
	unblock, outcome := startSlow(t, f, &mcpClient{cs: cs})
	t.Cleanup(unblock)
	select {
	case id := <-h.resuming:
		t.Logf("the gateway closed the call's stream; the client resumes it from %s", id)
	case <-time.After(guardTimeout):
		t.Fatal("the gateway never closed the call's stream")
	}
	cancel()
	waitNewSessionRefused(t, u)
	close(h.release)
	select {
	case o := <-outcome:
		t.Fatalf("the call ended within StopGrace, its stream closed for polling: %+v %v", o.res, o.err)
	default:
	}
	// The resumed stream's response begins with the call's result.
	unblock()
	select {
	case status := <-h.resumed:
		if status != http.StatusOK {
			t.Fatalf("the client's resume of its call's stream during the grace got status %d (0: no answer), want 200", status)
		}
	case <-time.After(guardTimeout):
		t.Fatal("the client's resume of its call's stream got no answer")
	}
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

// TestGatewayStopGraceAnswersAsk: during the stop grace, the client's
// answer to a call's elicitation (a POST of the session carrying no
// request) is served, and the call finishes with it. It was refused with
// the listener, and the call waited out the grace for an answer lost.
func TestGatewayStopGraceAnswersAsk(t *testing.T) {
	srv := toolFleet(t, nil, func(tk *toolkit.Toolkit) {
		if err := tk.Add(toolkit.Stream("greet", "Asks for a name.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
			res, err := toolkit.Ask(ctx, w, toolkit.MethodElicit, map[string]any{"message": "Who are you?",
				"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
			if err != nil {
				return w.Write(toolkit.Text("no answer: " + err.Error()))
			}
			m := res.(map[string]any)
			return w.Write(toolkit.Text(fmt.Sprintf("%v, %v", m["action"], m["content"].(map[string]any)["name"])))
		})); err != nil {
			t.Fatal(err)
		}
	})
	g := startGateway(t, srv, &GatewayOptions{StopGrace: 10 * time.Minute})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String() + "/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.ServeListener(ctx, l) }()
	asked, stopped := make(chan struct{}, 1), make(chan struct{})
	client := sdk.NewClient(&sdk.Implementation{Name: "elicit-test", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked <- struct{}{}
			<-stopped
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	cs, err := client.Connect(natstest.Ctx(t), &sdk.StreamableClientTransport{Endpoint: u, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	outcome := make(chan callOutcome, 1)
	go func() {
		res, err := cs.CallTool(natstest.Ctx(t), &sdk.CallToolParams{Name: "greet"})
		outcome <- callOutcome{res, err}
	}()
	select {
	case <-asked:
	case <-time.After(guardTimeout):
		t.Fatal("the client was never asked")
	}
	cancel()
	waitNewSessionRefused(t, u)
	close(stopped)
	select {
	case o := <-outcome:
		if o.err != nil || resultText(o.res) != "accept, Ada" {
			t.Errorf("the client got %q, %v; want its answer's result", resultText(o.res), o.err)
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

// TestGatewayStopGraceAnswersPing: during the stop grace, a session's
// ping is answered. It was answered 503 as a new call is, and the go-sdk's
// client with ClientOptions.KeepAlive closes its session on a ping that
// fails, so a call in flight that would have finished within the grace
// was lost to its client at the next keepalive.
func TestGatewayStopGraceAnswersPing(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{StopGrace: 10 * time.Minute})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String() + "/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.ServeListener(ctx, l) }()
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, MaxRetries: -1})
	waitTracked(t, g, 1)
	unblock, outcome := startSlow(t, f, c)
	t.Cleanup(unblock)
	cancel()
	waitNewSessionRefused(t, u)
	if err := c.cs.Ping(natstest.Ctx(t), nil); err != nil {
		t.Errorf("the session's ping during the stop grace failed: %v", err)
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

// TestGatewayStopGraceRefusesCallSpelledAsPing: during the stop grace a
// session's POST of a call is answered 503 however its keys are spelled.
// A call carrying a second key "Method": "ping" (or "Method": "", or
// "ID": null) was taken for a ping (a notification), as encoding/json
// matched that key to "method" ("id") too, while the go-sdk, which reads
// keys as written, ran it as the new call it was.
func TestGatewayStopGraceRefusesCallSpelledAsPing(t *testing.T) {
	f := startFleet(t)
	g := startGateway(t, f.srv, &GatewayOptions{StopGrace: 10 * time.Minute})
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(t)))
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String() + "/mcp"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- g.ServeListener(ctx, l) }()
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: u, MaxRetries: -1})
	waitTracked(t, g, 1)
	unblock, outcome := startSlow(t, f, c)
	t.Cleanup(unblock)
	cancel()
	waitNewSessionRefused(t, u)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","Method":"ping","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","Method":"","params":{"name":"slow","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","ID":null,"params":{"name":"slow","arguments":{}}}`,
	} {
		req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", c.cs.ID())
		req.Header.Set("Mcp-Protocol-Version", c.cs.InitializeResult().ProtocolVersion)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s during the stop grace: status %d, want 503", body, resp.StatusCode)
		}
	}
	unblock()
	select {
	case <-outcome:
	case <-time.After(guardTimeout):
		t.Fatal("the client got nothing for its call")
	}
	select {
	case <-done:
	case <-time.After(guardTimeout):
		t.Fatal("ServeListener did not return once its calls were answered")
	}
}
