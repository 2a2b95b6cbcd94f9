package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// TestGatewayMountedDeepResult: a mounted server's resource read whose
// result nests deeper than the bus carries (its contents' _meta, 100
// levels) reaches the gateway's client as an error saying so. The
// worker sent it on as it was, which the gateway could not decode: it
// asked every worker, then answered "undecodable".
func TestGatewayMountedDeepResult(t *testing.T) {
	srv := newTestServer(nil)
	deep := map[string]any{"leaf": true}
	for range 100 {
		deep = map[string]any{"n": deep}
	}
	srv.AddResource(&sdk.Resource{URI: "deep://one", Name: "deep"}, func(context.Context, *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: "deep://one", Text: "x", Meta: sdk.Meta(deep)}}}, nil
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	f := mountedFleet(t, ServerConfig{Name: "deep", Transport: TransportStreamableHTTP, URL: hs.URL, ServeResources: true})
	ctx := natstest.Ctx(t)
	g := startGateway(t, f.srv, &GatewayOptions{ExposeServers: []string{"deep"}})
	waitMounted(t, g, "w-mounted")
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	_, err := c.cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "deep://one"})
	if err == nil || !strings.Contains(err.Error(), "nests deeper") {
		t.Fatalf("read of a result nested 100 deep: %v, want an error saying it nests too deep", err)
	}
}
