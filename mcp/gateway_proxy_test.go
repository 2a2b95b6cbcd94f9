package mcp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

// proxyClient is a client of a gateway whose fleet mounts the go-sdk test
// server "s" (over Streamable HTTP, in this process, so its block tool's
// cancellation is seen): MCP through the fleet and back to MCP.
type proxyClient struct {
	*mcpClient
	logs chan *sdk.LoggingMessageParams
}

func proxyFleet(t *testing.T, more ...ServerConfig) *proxyClient {
	t.Helper()
	cfg := ServerConfig{Name: "s", Transport: TransportStreamableHTTP, URL: startHTTPPeer(t, false).url(), LogLevel: "debug"}
	f := mountedFleet(t, append([]ServerConfig{cfg}, more...)...)
	g, err := NewGateway(natstest.Ctx(t), natstest.Connect(t, f.srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	waitMounted(t, g, "w-mounted")
	c := &proxyClient{mcpClient: &mcpClient{progress: make(chan *sdk.ProgressNotificationParams, 64), changed: make(chan struct{}, 64)},
		logs: make(chan *sdk.LoggingMessageParams, 64)}
	client := sdk.NewClient(&sdk.Implementation{Name: "proxy-test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) { c.progress <- req.Params },
		LoggingMessageHandler:       func(_ context.Context, req *sdk.LoggingMessageRequest) { c.logs <- req.Params },
	})
	cs, err := client.Connect(natstest.Ctx(t), &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	c.cs = cs
	return c
}

// TestGatewayProxyCancel: a gateway client's notifications/cancelled for
// a call of a mounted server's tool reaches that server as
// notifications/cancelled (the tool's ctx ends), and the session goes on.
func TestGatewayProxyCancel(t *testing.T) {
	c := proxyFleet(t)
	drain(blockCancelled)
	ctx, cancel := context.WithCancel(natstest.Ctx(t))
	done := make(chan error, 1)
	go func() {
		_, err := c.cs.CallTool(ctx, &sdk.CallToolParams{Name: ToolName("s", "block"), Arguments: map[string]any{}, Meta: sdk.Meta{"progressToken": "b"}})
		done <- err
	}()
	select { // the block tool reports once it runs
	case <-c.progress:
	case <-time.After(guardTimeout):
		t.Fatal("the block tool never ran")
	}
	cancel()
	select {
	case <-blockCancelled:
	case <-time.After(guardTimeout):
		t.Fatal("the mounted server's tool was not cancelled")
	}
	if err := <-done; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	if res := callTool(t, natstest.Ctx(t), c.mcpClient, ToolName("s", "echo"), map[string]any{"text": "after"}, nil); resultText(res) != "after" {
		t.Fatalf("echo after the cancel = %q", resultText(res))
	}
}

// TestGatewayProxyProgress: a mounted server's progress reaches a gateway
// client on its own token, increasing, and only a client that asked.
// (The worker folds the progress of a call that ends within its flush
// delay into the final, so the server is the npm one, whose tool takes
// its time.)
func TestGatewayProxyProgress(t *testing.T) {
	c := proxyFleet(t, everythingStdio(t, "everything"))
	ctx := natstest.Ctx(t)
	long := ToolName("everything", "trigger-long-running-operation")
	for _, token := range []any{"tok", 7} {
		res := callTool(t, ctx, c.mcpClient, long, map[string]any{"duration": 1, "steps": 4}, token)
		if res.IsError {
			t.Fatalf("%s = %+v", long, res)
		}
		last := 0.0
		for i := 1; i <= 4; i++ {
			select {
			case p := <-c.progress:
				if fmt.Sprint(p.ProgressToken) != fmt.Sprint(token) || p.Progress <= last {
					t.Fatalf("progress %d: %+v (token %v, last %v)", i, p, token, last)
				}
				last = p.Progress
			case <-time.After(guardTimeout):
				t.Fatalf("progress %d of 4 never came", i)
			}
		}
	}
	// Without a token: none. A later call with one is heard, and only it.
	callTool(t, ctx, c.mcpClient, long, map[string]any{"duration": 1, "steps": 2}, nil)
	// (Two steps: a call whose only report comes within the worker's
	// flush delay of its end has that report folded away, subjects.md.)
	callTool(t, ctx, c.mcpClient, long, map[string]any{"duration": 1, "steps": 2}, "last")
	select {
	case p := <-c.progress:
		if p.ProgressToken != "last" {
			t.Fatalf("progress %+v sent for a call without a token", p)
		}
	case <-time.After(guardTimeout):
		t.Fatal("no progress for the call with a token")
	}
}

// TestGatewayProxyLogging: a mounted server's log messages reach a gateway
// client at or above the level it set, and none before it sets one.
func TestGatewayProxyLogging(t *testing.T) {
	c := proxyFleet(t)
	ctx := natstest.Ctx(t)
	callTool(t, ctx, c.mcpClient, ToolName("s", "log"), map[string]any{"n": 2}, nil)
	if err := c.cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, ctx, c.mcpClient, ToolName("s", "log"), map[string]any{"n": 3}, nil)
	for i := 1; i <= 3; i++ {
		select {
		case l := <-c.logs:
			if l.Level != "info" || l.Data != fmt.Sprint("message ", i) {
				t.Fatalf("log %d = %+v", i, l)
			}
		case <-time.After(guardTimeout):
			t.Fatalf("log message %d of 3 never came", i)
		}
	}
	if err := c.cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	callTool(t, ctx, c.mcpClient, ToolName("s", "log"), map[string]any{"n": 1}, nil)
	select {
	case l := <-c.logs:
		t.Fatalf("log %+v sent below the level set", l)
	case <-time.After(500 * time.Millisecond):
	}
}

// TestGatewayProxyContent: every content type of a mounted server's result
// reaches a gateway client typed as the server sent it.
func TestGatewayProxyContent(t *testing.T) {
	c := proxyFleet(t)
	res := callTool(t, natstest.Ctx(t), c.mcpClient, ToolName("s", "content"), map[string]any{}, nil)
	if res.IsError || len(res.Content) != 6 {
		t.Fatalf("content = %+v", res)
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || tc.Text != "hello" {
		t.Errorf("content[0] = %#v", res.Content[0])
	}
	if img, ok := res.Content[1].(*sdk.ImageContent); !ok || img.MIMEType != "image/png" || string(img.Data) != string(pngBytes) {
		t.Errorf("content[1] = %#v", res.Content[1])
	}
	if au, ok := res.Content[2].(*sdk.AudioContent); !ok || au.MIMEType != "audio/wav" || string(au.Data) != "RIFF....WAVE" {
		t.Errorf("content[2] = %#v", res.Content[2])
	}
	if er, ok := res.Content[3].(*sdk.EmbeddedResource); !ok || er.Resource.URI != "file:///notes.txt" || er.Resource.Text != "note body" || er.Resource.MIMEType != "text/plain" {
		t.Errorf("content[3] = %#v", res.Content[3])
	}
	if er, ok := res.Content[4].(*sdk.EmbeddedResource); !ok || er.Resource.URI != "file:///blob.bin" || string(er.Resource.Blob) != "\x00\x01\x02" || er.Resource.MIMEType != "application/octet-stream" {
		t.Errorf("content[4] = %#v", res.Content[4])
	}
	if rl, ok := res.Content[5].(*sdk.ResourceLink); !ok || rl.URI != "file:///big.csv" || rl.Name != "big.csv" || rl.MIMEType != "text/csv" || rl.Size == nil || *rl.Size != 42 {
		t.Errorf("content[5] = %#v, want the resource link", res.Content[5])
	}
	if sc, _ := res.StructuredContent.(map[string]any); sc["temperature"] != 21.5 {
		t.Errorf("structuredContent = %v", res.StructuredContent)
	}
	res = callTool(t, natstest.Ctx(t), c.mcpClient, ToolName("s", "fail"), map[string]any{}, nil)
	if !res.IsError || resultText(res) != "disk full" {
		t.Errorf("fail = %+v, want isError with the server's text", res)
	}
}

// TestGatewayProxyResourceLinks: the npm server's intro text and resource
// links (consecutive text blocks in the fleet, which merge into one)
// reach a gateway client as that text and those links.
func TestGatewayProxyResourceLinks(t *testing.T) {
	c := proxyFleet(t, everythingStdio(t, "everything"))
	res := callTool(t, natstest.Ctx(t), c.mcpClient, ToolName("everything", "get-resource-links"), map[string]any{"count": 3}, nil)
	if res.IsError || len(res.Content) != 4 {
		t.Fatalf("get-resource-links = %d items %+v, want the text and 3 links", len(res.Content), res.Content)
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || !strings.HasPrefix(tc.Text, "Here are 3 resource links") {
		t.Errorf("content[0] = %#v", res.Content[0])
	}
	for i, item := range res.Content[1:] {
		if rl, ok := item.(*sdk.ResourceLink); !ok || rl.URI == "" || !strings.Contains(rl.Name, fmt.Sprint("Resource ", i+1)) || rl.MIMEType == "" {
			t.Errorf("content[%d] = %#v, want resource link %d", i+1, item, i+1)
		}
	}
	if md, _ := res.Meta[GatewayMetaMetadata].(map[string]any); md != nil && md["mcp_content"] != nil {
		t.Errorf("_meta carries the layout: %v", md)
	}
}

// TestGatewayProxyTimeout: a mounted tool that never answers ends at the
// server's configured timeout, which the server hears as
// notifications/cancelled; the gateway client gets isError with code
// timeout and the session goes on.
func TestGatewayProxyTimeout(t *testing.T) {
	cfg := ServerConfig{Name: "slow", Transport: TransportStreamableHTTP, URL: startHTTPPeer(t, false).url(), Timeout: Duration(500 * time.Millisecond)}
	c := proxyFleet(t, cfg)
	drain(blockCancelled)
	res := callTool(t, natstest.Ctx(t), c.mcpClient, ToolName("slow", "block"), map[string]any{}, nil)
	if !res.IsError || res.Meta[GatewayMetaCode] != "timeout" {
		t.Fatalf("block = %+v %v, want isError with code timeout", res, res.Meta)
	}
	select {
	case <-blockCancelled:
	case <-time.After(guardTimeout):
		t.Fatal("the server's tool was not cancelled at the timeout")
	}
	if res := callTool(t, natstest.Ctx(t), c.mcpClient, ToolName("slow", "echo"), map[string]any{"text": "after"}, nil); resultText(res) != "after" {
		t.Fatalf("echo after the timeout = %q", resultText(res))
	}
}
