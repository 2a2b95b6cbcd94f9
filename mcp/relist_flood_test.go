package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// A server that announces a change of its tools after every listing (a
// broken or a hostile one) kept the worker re-listing them as fast as it
// answered, about 80 times a second, for as long as it ran: re-listings
// asked for by notifications come minRelistGap apart now, however many
// arrive.
func TestListChangedFloodIsPaced(t *testing.T) {
	srv := newTestServer(nil)
	var lists atomic.Int64
	srv.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" {
				n := lists.Add(1)
				sdk.AddTool(srv, &sdk.Tool{Name: "changing", Description: fmt.Sprint("Version ", n, ".")},
					func(context.Context, *sdk.CallToolRequest, args) (*sdk.CallToolResult, any, error) {
						return textResult("ok"), nil, nil
					})
			}
			return res, err
		}
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	c, err := NewClient(ServerConfig{Name: "flood", Transport: TransportStreamableHTTP, URL: hs.URL}, &Options{RelistInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(testCtx(t), toolkit.New(nil)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	// A slow machine lists fewer times, never more.
	t.Logf("listed %d times in 2s", lists.Load())
	if n := lists.Load(); n > 2+int64(2*time.Second/minRelistGap) {
		t.Errorf("the tools were listed %d times in 2s: a flood of list_changed re-lists without pause", n)
	}
}
