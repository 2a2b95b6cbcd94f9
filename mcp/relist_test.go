package mcp

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// upgradePeer replaces the peer's server by one without "late" and with
// "added", forgetting every session (an upgraded server).
func upgradePeer(p *httpPeer) {
	srv := newTestServer(nil)
	srv.RemoveTools("late")
	sdk.AddTool(srv, &sdk.Tool{Name: "added", Description: "New in this version."},
		func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
			return textResult("added"), nil, nil
		})
	p.mu.Lock()
	p.handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	p.mu.Unlock()
}

// mountWith is mount with the client's options.
func mountWith(t *testing.T, cfg ServerConfig, opts *Options) *toolkit.Toolkit {
	t.Helper()
	c, err := NewClient(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	tk := toolkit.New(nil)
	if err := c.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	return tk
}

// A stateless server has no session to lose and hears no change between
// calls: upgraded, it kept its old tools in the toolkit for good. A call
// the server answers "unknown tool" re-lists its tools.
func TestStatelessUnknownToolReLists(t *testing.T) {
	p := startHTTPPeer(t, false)
	tk := mountWith(t, ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url(), Mode: ModeStateless},
		&Options{RelistInterval: -1}) // no periodic re-list: the call alone must do it
	ctx := testCtx(t)
	if _, ok := tk.Get("mcp__go__late"); !ok {
		t.Fatal("mcp__go__late not registered")
	}
	upgradePeer(p)
	r := run(t, ctx, tk, "mcp__go__late", nil)
	if r.final.Code != toolkit.CodeToolError {
		t.Fatalf("a tool the server no longer has: %+v, want tool_error", r.final)
	}
	natstest.WaitFor(t, "the upgraded server's tools in the toolkit", func() bool {
		_, added := tk.Get("mcp__go__added")
		_, late := tk.Get("mcp__go__late")
		return added && !late
	})
	if r := run(t, ctx, tk, "mcp__go__added", nil); r.final.Text() != "added" {
		t.Fatalf("the new tool: %+v", r.final)
	}
}

// A stateless server's new tools appear without any call: its tools are
// listed again every RelistInterval.
func TestStatelessReListsPeriodically(t *testing.T) {
	p := startHTTPPeer(t, false)
	tk := mountWith(t, ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url(), Mode: ModeStateless},
		&Options{RelistInterval: 100 * time.Millisecond})
	if _, ok := tk.Get("mcp__go__added"); ok {
		t.Fatal("mcp__go__added registered before the upgrade")
	}
	upgradePeer(p)
	natstest.WaitFor(t, "the upgraded server's tools in the toolkit", func() bool {
		_, added := tk.Get("mcp__go__added")
		_, late := tk.Get("mcp__go__late")
		return added && !late
	})
}
