package mcp

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// A server mounted with enable_tools that drops one of them (an upgrade)
// failed every later re-listing with ErrUnknownTool, so the registration
// stood still: the tool it no longer has stayed registered (its calls
// answered "unknown tool", each asking for another listing that failed
// the same way), and a change of the other enabled tools never reached
// the toolkit. A re-sync registers what the server has and warns of the
// rest.
func TestEnabledToolVanishes(t *testing.T) {
	p := startHTTPPeer(t, false)
	tk := mountWith(t, ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url(), Mode: ModeStateless,
		EnableTools: []string{"echo", "late"}}, &Options{RelistInterval: 100 * time.Millisecond})
	if _, ok := tk.Get("mcp__go__late"); !ok {
		t.Fatal("mcp__go__late not registered")
	}
	// The upgraded server: "late" gone, "echo" described anew.
	srv := sdk.NewServer(&sdk.Implementation{Name: "toolbus-test", Version: "2"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "Echo text, version 2."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return textResult(in.Text), nil, nil
		})
	p.mu.Lock()
	p.handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	p.mu.Unlock()
	natstest.WaitFor(t, "the upgraded server's tools in the toolkit", func() bool {
		echo, _ := tk.Get("mcp__go__echo")
		_, late := tk.Get("mcp__go__late")
		return echo.Description == "Echo text, version 2." && !late
	})
}
