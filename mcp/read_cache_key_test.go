package mcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk's session keeps the last resources/read result (and list
// page) under uncachedKey, served from there while its ttlMs lasts to a
// request whose URI (or cursor) is that key. Forward refused the key
// only under the params' exact "uri" and "cursor", while the params
// decode as encoding/json does, matching keys case-insensitively: a
// gateway client sending {"URI": uncachedKey} was answered the last
// resource any client read through the worker's shared session, a
// private one included. The decoded params are checked.
func TestUncachedKeyRefusedHoweverSpelt(t *testing.T) {
	srv := newTestServer(nil)
	srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: "mem", URITemplate: "mem://{n}"},
		func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
			return &sdk.ReadResourceResult{Cacheable: sdk.Cacheable{TTLMs: 600_000, CacheScope: "private"},
				Contents: []*sdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "the contents of " + req.Params.URI}}}, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	_, c := mount(t, ServerConfig{Name: "mem", Transport: TransportStreamableHTTP, URL: hs.URL})
	ctx := testCtx(t)
	res, err := c.Forward(ctx, MethodReadResource, map[string]any{"uri": "mem://alice"})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res["contents"]); !strings.Contains(got, "the contents of mem://alice") {
		t.Fatalf("reading mem://alice: %.200s", got)
	}
	for _, tc := range []struct {
		method string
		params map[string]any
	}{
		{MethodReadResource, map[string]any{"URI": uncachedKey}},
		{MethodReadResource, map[string]any{"Uri": uncachedKey}},
		{MethodReadResource, map[string]any{"uri": uncachedKey}},
	} {
		res, err := c.Forward(ctx, tc.method, tc.params)
		if err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("%s %q was passed on: %.200v, %v", tc.method, tc.params, res, err)
		}
	}
}
