package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewaySpanOfDeniedCall: the gateway's span of a call a policy
// denied carries error.type (its code, "denied") without the error
// status, as the worker's execute_tool span of it does (internal/callspan):
// it had no error.type.
func TestGatewaySpanOfDeniedCall(t *testing.T) {
	f := startFleet(t)
	tk := newWorkerToolkit(t, f.srv)
	if err := tk.Add(toolkit.Func("deny", "Denied.", func(context.Context, textIn) (string, error) {
		return "", &toolkit.Error{Code: toolkit.CodeDenied, Message: "PermissionDenied: no."}
	})); err != nil {
		t.Fatal(err)
	}
	serveWorker(t, f.srv, tk, "w-deny")
	_, rec, c := tracedGateway(t, f, GatewayOptions{})
	if res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "deny", Arguments: map[string]any{"text": "a"}}); err != nil || !res.IsError {
		t.Fatalf("deny: %+v %v", res, err)
	}
	var found bool
	for _, sp := range rec.Ended() {
		if a := spanAttrs(sp); sp.SpanKind().String() == "server" && a["gen_ai.tool.name"] == "deny" {
			found = true
			if a["error.type"] != string(toolkit.CodeDenied) || sp.Status().Code == codes.Error {
				t.Errorf("the denied call's span: error.type %q, status %v; want denied, not the error status", a["error.type"], sp.Status())
			}
		}
	}
	if !found {
		t.Fatalf("no tools/call span of deny among %d spans", len(rec.Ended()))
	}
}

// TestClientSpanOfInterruptedCall: the MCP client's span of a call its
// caller cancelled carries error.type interrupted without the error
// status, as the worker's and the gateway's spans of it do
// (internal/callspan): it was marked failed.
func TestClientSpanOfInterruptedCall(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	srv := sdk.NewServer(&sdk.Implementation{Name: "blocking", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "block"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		select {
		case started <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done(): // the client's notifications/cancelled
		case <-release: // the test's end, should the cancel not arrive
		}
		return nil, nil, ctx.Err()
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(release) }) // before hs.Close, which waits for the handler
	rec, tp := spanRecorder()
	c, err := NewClient(ServerConfig{Name: "blk", Transport: TransportStreamableHTTP, URL: hs.URL}, &Options{Tracer: tp.Tracer("client")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Connect(natstest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(natstest.Ctx(t))
	go func() {
		<-started
		cancel()
	}()
	if err := c.Call(ctx, "block", nil, toolkit.WriterFuncs{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v", err)
	}
	natstest.WaitFor(t, "the call's span", func() bool { return len(rec.Ended()) > 0 })
	sp := rec.Ended()[0]
	if a := spanAttrs(sp); a["error.type"] != string(toolkit.CodeInterrupted) || sp.Status().Code == codes.Error {
		t.Errorf("the cancelled call's span: error.type %q, status %v; want interrupted, not the error status", a["error.type"], sp.Status())
	}
	if a := spanAttrs(sp); a["gen_ai.tool.type"] != "extension" {
		t.Errorf("the client's span: gen_ai.tool.type %q, want extension (a tool of an MCP server)", a["gen_ai.tool.type"])
	}
}
