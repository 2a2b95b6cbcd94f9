package mcp

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"
)

// TestGatewaySpanOfFailedCall: the gateway's span of a tools/call whose
// result is an error says so, as the MCP semantic conventions have it:
// error.type (the final's code) and the error status; a successful
// call's span has neither. Every tools/call span was left unset, the
// failed calls' like the others.
func TestGatewaySpanOfFailedCall(t *testing.T) {
	f := startFleet(t)
	_, rec, c := tracedGateway(t, f, GatewayOptions{})
	if res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": 5}}); err != nil || !res.IsError {
		t.Fatalf("echo with a number: %+v %v", res, err)
	}
	if res := callTool(t, context.Background(), c, "echo", map[string]any{"text": "a"}, nil); resultText(res) != "a" {
		t.Fatalf("echo: %+v", res)
	}
	var failed, ok int
	for _, sp := range rec.Ended() {
		if sp.SpanKind().String() != "server" || sp.Name() != "tools/call echo" {
			continue
		}
		attrs := spanAttrs(sp)
		if attrs["error.type"] != "" {
			failed++
			if attrs["error.type"] != "invalid_input" || sp.Status().Code != codes.Error {
				t.Errorf("the failed call's span: error.type %q, status %v", attrs["error.type"], sp.Status())
			}
		} else {
			ok++
			if sp.Status().Code == codes.Error {
				t.Errorf("the successful call's span has status %v", sp.Status())
			}
		}
	}
	if failed != 1 || ok != 1 {
		t.Errorf("%d spans with error.type, %d without; want 1 and 1", failed, ok)
	}
}
