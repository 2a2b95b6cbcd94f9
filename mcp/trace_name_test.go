package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewaySpanOfUnknownTool: the name of a tools/call comes from the
// MCP client; one the fleet does not serve is answered not_found, and its
// span neither takes the name into its span name (a trace backend lists
// every span name as an operation) nor carries more of it than the log
// line does.
func TestGatewaySpanOfUnknownTool(t *testing.T) {
	f := startFleet(t)
	_, rec, c := tracedGateway(t, f, GatewayOptions{})
	made := "no_such_" + strings.Repeat("x", 64<<10)
	if res, err := c.cs.CallTool(context.Background(), &sdk.CallToolParams{Name: made}); err != nil || !res.IsError {
		t.Fatalf("unknown tool: %+v %v", res, err)
	}
	if res := callTool(t, context.Background(), c, "echo", map[string]any{"text": "a"}, nil); resultText(res) != "a" {
		t.Fatalf("echo: %+v", res)
	}
	names := map[string]bool{}
	for _, sp := range rec.Ended() {
		if sp.SpanKind().String() != "server" {
			continue
		}
		names[sp.Name()] = true
		for _, a := range sp.Attributes() {
			if len(a.Value.Emit()) > toolkit.MaxNameLen+8 {
				t.Errorf("span %.40q: attribute %s of %d bytes", sp.Name(), a.Key, len(a.Value.Emit()))
			}
		}
	}
	if !names["tools/call echo"] || !names["tools/call"] || len(names) != 2 {
		var got []string
		for n := range names {
			got = append(got, cutText(n, 40))
		}
		t.Fatalf("server spans %q, want tools/call echo and tools/call", got)
	}
}
