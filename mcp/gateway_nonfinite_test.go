package mcp

import (
	"context"
	"math"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/toolkit"
)

type statsOut struct {
	Mean float64   `json:"mean"`
	Max  float64   `json:"max"`
	All  []float64 `json:"all"`
}

// TestGatewayNonFiniteNested: a fleet tool whose structured result
// holds a NaN or an infinity inside it reaches an MCP client as the text
// AgentScope's json.dumps writes ({"mean": NaN, ...}), a success, as a
// NaN alone does ("NaN"), not as tool_error.
func TestGatewayNonFiniteNested(t *testing.T) {
	srv, err := embedded.Start(&embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	tk := newWorkerToolkit(t, srv)
	for _, tool := range []*toolkit.Tool{
		toolkit.Func("stats", "Statistics.", func(ctx context.Context, in struct{}) (statsOut, error) {
			return statsOut{Mean: math.NaN(), Max: math.Inf(1), All: []float64{1, math.Inf(-1)}}, nil
		}),
		toolkit.Func("mean", "Mean.", func(ctx context.Context, in struct{}) (float64, error) { return math.NaN(), nil }),
	} {
		if err := tk.Add(tool); err != nil {
			t.Fatal(err)
		}
	}
	serveWorker(t, srv, tk, "w1")
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, startGateway(t, srv, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()
	for tool, want := range map[string]string{
		"stats": `{"mean": NaN, "max": Infinity, "all": [1, -Infinity]}`,
		"mean":  "NaN",
	} {
		res := callTool(t, ctx, c, tool, nil, nil)
		if res.IsError || resultText(res) != want {
			t.Errorf("%s: error %v %v %q, want success %q", tool, res.IsError, res.Meta[GatewayMetaCode], resultText(res), want)
		}
	}
}
