package mcp

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewaySpanNamesToolTypeAndDescription: the gateway's span of a
// tools/call of a tool the fleet serves carries gen_ai.tool.type
// ("function" for a Go tool, "extension" for one a worker proxies from
// an MCP server) and gen_ai.tool.description, as the worker's
// execute_tool span of the same call does; it had neither.
func TestGatewaySpanNamesToolTypeAndDescription(t *testing.T) {
	f := startFleet(t)
	tk := newWorkerToolkit(t, f.srv)
	if err := tk.Add(toolkit.Func("proxied", "A tool of an MCP server.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }),
		toolkit.WithKind(toolkit.KindMCP)); err != nil {
		t.Fatal(err)
	}
	serveWorker(t, f.srv, tk, "w2")
	_, rec, c := tracedGateway(t, f, GatewayOptions{})
	if res := callTool(t, context.Background(), c, "echo", map[string]any{"text": "a"}, nil); resultText(res) != "a" {
		t.Fatalf("echo: %+v", res)
	}
	natstest.WaitFor(t, "proxied served through the gateway", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "proxied", Arguments: map[string]any{}})
		return err == nil && !res.IsError
	})
	want := map[string][2]string{
		"tools/call echo":    {"function", "Echo the text back."},
		"tools/call proxied": {"extension", "A tool of an MCP server."},
	}
	for _, sp := range rec.Ended() {
		w, ok := want[sp.Name()]
		if !ok || sp.SpanKind().String() != "server" {
			continue
		}
		attrs := spanAttrs(sp)
		if attrs["gen_ai.tool.type"] != w[0] || attrs["gen_ai.tool.description"] != w[1] {
			t.Errorf("span %s: gen_ai.tool.type %q, gen_ai.tool.description %q, want %q, %q", sp.Name(),
				attrs["gen_ai.tool.type"], attrs["gen_ai.tool.description"], w[0], w[1])
		}
		delete(want, sp.Name())
	}
	for name := range want {
		t.Errorf("no server span %s", name)
	}
}
