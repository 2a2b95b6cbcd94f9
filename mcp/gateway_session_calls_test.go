package mcp

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// One session's calls were not bounded: a client (or one batch POST of
// an old protocol version, up to 1024 messages: maxBatch) could send the
// fleet as many calls at once as it liked through the gateway. Past
// GatewayOptions.MaxSessionCalls a call ends overloaded at once; another
// session is not affected, and the session calls again once one ended.
func TestGatewaySessionCallsBounded(t *testing.T) {
	f := startFleet(t)
	ctx := natstest.Ctx(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxSessionCalls: 2})
	url := serveGatewayHTTP(t, g)
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	other := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	waitTracked(t, g, 2)

	echo := func(c *mcpClient) *sdk.CallToolResult {
		t.Helper()
		res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	unblock1, out1 := startSlow(t, f, c)
	unblock2, out2 := startSlow(t, f, c)
	defer unblock1()
	defer unblock2()

	res := echo(c)
	if !res.IsError || !strings.Contains(resultText(res), "TooManyCallsError") {
		t.Fatalf("a third call of a session bounded at 2: %+v %q", res, resultText(res))
	}
	if res := echo(other); res.IsError || resultText(res) != "hi" {
		t.Fatalf("another session's call: %+v %q", res, resultText(res))
	}
	unblock1()
	<-out1
	if res := echo(c); res.IsError || resultText(res) != "hi" {
		t.Fatalf("the session's call once one ended: %+v %q", res, resultText(res))
	}
	unblock2()
	<-out2
}

// The sessions' bounds were the only ones: 1024 sessions of 256 requests
// each let one gateway hold 262,144 requests in flight (each a goroutine,
// its JSON-RPC request and its input held encoded and decoded). Past
// GatewayOptions.MaxCalls, across sessions, a call ends overloaded at
// once and another request gets a JSON-RPC error, both TooManyCallsError
// naming the gateway's bound; once one ended, calls go through again.
func TestGatewayCallsBounded(t *testing.T) {
	f := startFleet(t)
	ctx := natstest.Ctx(t)
	g := startGateway(t, f.srv, &GatewayOptions{MaxCalls: 2})
	url := serveGatewayHTTP(t, g)
	a := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	b := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: url})
	waitTracked(t, g, 3)

	unblockA, outA := startSlow(t, f, a)
	unblockB, outB := startSlow(t, f, b)
	defer unblockA()
	defer unblockB()

	res, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), "TooManyCallsError") || !strings.Contains(resultText(res), "the gateway already runs 2 requests") {
		t.Fatalf("a third call of a gateway bounded at 2: %+v %q", res, resultText(res))
	}
	if _, err := c.cs.ListPrompts(ctx, nil); err == nil || !strings.Contains(err.Error(), "TooManyCallsError") {
		t.Fatalf("a prompts/list of a gateway bounded at 2, with 2 calls running: %v", err)
	}
	unblockA()
	<-outA
	res, err = c.cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || resultText(res) != "hi" {
		t.Fatalf("a call once one ended: %+v %v", res, err)
	}
	unblockB()
	<-outB
}
