package mcp

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestZZGatewayProbe(t *testing.T) {
	f := startFleet(t)
	g := newGateway(t, f)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deep := func(n int) map[string]any {
		var v any = "x"
		for range n {
			v = map[string]any{"a": v}
		}
		return map[string]any{"text": "t", "extra": v}
	}
	try := func(what, name string, args map[string]any, tok any) {
		p := &sdk.CallToolParams{Name: name, Arguments: args}
		if tok != nil {
			p.Meta = sdk.Meta{"progressToken": tok}
		}
		start := time.Now()
		res, err := c.cs.CallTool(ctx, p)
		if err != nil {
			t.Logf("%s: %v err %.300v", what, time.Since(start), err)
			return
		}
		t.Logf("%s: %v meta %v %.300q", what, time.Since(start), res.Meta, resultText(res))
	}
	try("deep40", "echo", deep(40), nil)
	try("deep70", "echo", deep(70), nil)
	try("deep300", "echo", deep(300), nil)
	try("dot", "echo.x", nil, nil)
	try("star", "*", nil, nil)
	try("gt", ">", nil, nil)
	try("space", "a b", nil, nil)
	try("empty", "", nil, nil)
	try("unicode", "échö", nil, nil)
	try("nul", "ec\x00ho", nil, nil)
	try("bigtok", "echo", map[string]any{"text": "x"}, strings.Repeat("t", 1<<20))
	try("objtok", "echo", map[string]any{"text": "x"}, map[string]any{"a": 1})
	try("steps-bigtok", "steps", map[string]any{"n": 2}, strings.Repeat("t", 1<<20))
	try("steps-floattok", "steps", map[string]any{"n": 2}, 1.5)
	try("bigkey", "echo", map[string]any{strings.Repeat("k", 2<<20): 1, "text": "x"}, nil)
	try("after", "echo", map[string]any{"text": "still here"}, nil)
}
