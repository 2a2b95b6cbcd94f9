package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk's client (protocol 2026-07-28) keeps every resources/read
// result in a cache of its session keyed by URI, whatever its ttlMs,
// and lets an entry go only when the same URI is read again or the
// server says it was updated. A worker passes reads on for the fleet's
// gateways on one long-lived session, so every distinct URI an MCP
// client read (a file server's files, say) stayed in the worker's memory
// for the life of the session. The worker keeps none of them.
func TestReadResultsNotKept(t *testing.T) {
	srv := newTestServer(nil)
	body := strings.Repeat("r", 64<<10)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "mem", URITemplate: "mem://{n}"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: body}}}, nil
		})
	// A stateless handler: the go-sdk serves protocol 2026-07-28 so.
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	_, c := mount(t, ServerConfig{Name: "mem", Transport: TransportStreamableHTTP, URL: hs.URL})
	ctx := testCtx(t)
	read := func(uri string) {
		res, err := c.Forward(ctx, MethodReadResource, map[string]any{"uri": uri})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(res["contents"]); !strings.Contains(got, uri) {
			t.Fatalf("reading %s: %.200s", uri, got)
		}
	}
	read("mem://warm")
	c.mu.Lock()
	v := c.sess.cs.InitializeResult().ProtocolVersion
	c.mu.Unlock()
	if v != "2026-07-28" {
		t.Fatalf("the session speaks protocol %s, not the one whose go-sdk client caches reads", v)
	}
	if _, err := c.Forward(ctx, MethodReadResource, map[string]any{"uri": uncachedKey}); err == nil {
		t.Error("a read of the URI the caches are kept under was passed on")
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	const n = 1000 // 64 MiB of contents
	for i := range n {
		read(fmt.Sprint("mem://", i))
	}
	if grew := int64(heap()) - int64(before); grew > 16<<20 {
		t.Errorf("after reading %d resources of 64 KiB the heap grew by %d MiB", n, grew>>20)
	}
}
