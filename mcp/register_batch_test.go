package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// manyToolsServer serves, over Streamable HTTP, an MCP server listing n
// tools tool0 … tool<n-1>, and returns its URL. Described, each has a
// description and a property; else neither (so that 10,000 of them fit in
// MaxServerToolBytes).
func manyToolsServer(t testing.TB, n int, described bool) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "many", Version: "1"}, nil)
	for i := range n {
		tool := &sdk.Tool{Name: fmt.Sprintf("tool%d", i), InputSchema: map[string]any{"type": "object"}}
		if described {
			tool.Description = fmt.Sprintf("Tool %d.", i)
			tool.InputSchema = map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
		}
		srv.AddTool(tool, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) { return textResult("ok"), nil })
	}
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestRegisterServerAsOneChange: a server's tools go into the toolkit as
// one change (one copy of the registry, one announcement by the worker),
// in the server's order; a tool whose name another registration holds is
// skipped and the rest registered; registering again with nothing changed
// changes nothing. (Each tool used to be its own Add: n changes, each
// copying the whole registry.)
func TestRegisterServerAsOneChange(t *testing.T) {
	const n = 500
	u := manyToolsServer(t, n, true)
	tk := toolkit.New(nil)
	other := toolkit.Raw("mcp__many__tool7", "Someone else's.", nil, func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil })
	if err := tk.Add(other); err != nil {
		t.Fatal(err)
	}
	var changes atomic.Int32
	tk.OnChange(func() { changes.Add(1) })
	c := newTestClient(t, ServerConfig{Name: "many", Transport: TransportStreamableHTTP, URL: u})
	if err := c.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	if got := changes.Load(); got != 1 {
		t.Errorf("registering %d tools made %d toolkit changes, want 1", n, got)
	}
	names := c.Tools()
	if len(names) != n-1 {
		t.Fatalf("%d tools registered, want %d (all but the one whose name is taken)", len(names), n-1)
	}
	listed, err := c.ListTools(testCtx(t)) // the go-sdk lists by name
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, tl := range listed {
		if tl.Name != "tool7" {
			want = append(want, ToolName("many", tl.Name))
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("registered %v…, want the server's order %v…", names[:5], want[:5])
	}
	if got, _ := tk.Get("mcp__many__tool7"); got.Description != "Someone else's." {
		t.Errorf("the taken name's tool is %q, want the other registration's", got.Description)
	}
	if got := len(tk.Tools()); got != n {
		t.Errorf("the toolkit holds %d tools, want %d", got, n)
	}

	changes.Store(0)
	if err := c.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	if got := changes.Load(); got != 0 {
		t.Errorf("registering the same tools again made %d toolkit changes, want none", got)
	}
}
