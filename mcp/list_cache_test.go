package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// The go-sdk's client (protocol 2026-07-28) keeps every page of a
// tools/list in a cache of its session, keyed by the page's cursor,
// and lets an entry go only when the same cursor is asked again or the
// server announces tools/list_changed. A server that pages its listing
// with new cursors each time had every page of every re-listing (every
// RelistInterval, or at every call it answers "unknown tool") kept for
// the life of the shared session: the worker's memory grew by a
// listing's size each time. Only the last listing's tools are kept, and
// a tool of any of its pages still gets its Mcp-Param headers.
func TestListingPagesNotKept(t *testing.T) {
	srv := newTestServer(nil)
	big := strings.Repeat("d", 400<<10) // registered: under MaxServerToolBytes
	var listings atomic.Int64
	headers := make(chan string, 256)
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method != "tools/list" {
				return next(ctx, method, req)
			}
			p := req.GetParams().(*sdk.ListToolsParams)
			if p.Cursor == "" {
				// The first page: the tool whose argument goes in a header,
				// and a cursor not seen before.
				return &sdk.ListToolsResult{Tools: []*sdk.Tool{{Name: "routed", Description: "Routed by region.",
					InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}},
					NextCursor: fmt.Sprint("page-", listings.Add(1))}, nil
			}
			return &sdk.ListToolsResult{Tools: []*sdk.Tool{{Name: "big", Description: big, InputSchema: json.RawMessage(`{"type":"object"}`)}}}, nil
		}
	})
	srv.AddTool(&sdk.Tool{Name: "routed", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return textResult("routed"), nil
		})
	// A stateless handler: the go-sdk serves protocol 2026-07-28 so.
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			select {
			case headers <- r.Header.Get("Mcp-Param-Region"):
			default:
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	tk, c := mount(t, ServerConfig{Name: "pages", Transport: TransportStreamableHTTP, URL: hs.URL})
	c.mu.Lock()
	v := c.sess.cs.InitializeResult().ProtocolVersion
	c.mu.Unlock()
	if v != "2026-07-28" {
		t.Fatalf("the session speaks protocol %s, not the one whose go-sdk client caches listings", v)
	}
	ctx := testCtx(t)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const n = 100 // 40 MiB of listings
	for range n {
		if err := c.Register(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	if grew := int64(heap()) - int64(before); grew > 16<<20 {
		t.Errorf("after %d listings of 400 KiB the heap grew by %d MiB", n, grew>>20)
	}
	for len(headers) > 0 {
		<-headers
	}
	if r := run(t, ctx, tk, "mcp__pages__routed", map[string]any{"region": "eu"}); r.final.State != toolkit.StateSuccess {
		t.Fatalf("routed: %s %.200q", r.final.State, r.final.Text())
	}
	if got := <-headers; got != "eu" {
		t.Errorf("a tool of the listing's first page was called with Mcp-Param-Region %q, want eu", got)
	}
}
