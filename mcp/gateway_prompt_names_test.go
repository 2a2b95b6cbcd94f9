package mcp

import (
	"context"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/internal/natstest"
)

func init() {
	if os.Getenv(mountTestServerEnv) == "dottedprompt" {
		srv := sdk.NewServer(&sdk.Implementation{Name: "dottedprompt", Version: "1"}, nil)
		srv.AddPrompt(&sdk.Prompt{Name: "code.review", Description: "Review code."},
			func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
				return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "review " + req.Params.Name}}}}, nil
			})
		_ = srv.Run(context.Background(), &sdk.StdioTransport{})
		os.Exit(0)
	}
}

// A mounted server's prompt whose name has characters outside
// [A-Za-z0-9_-] is listed as mcp__<server>__<name> with them written 'x',
// as a tool's name is; getting it by that name asks the server for its
// own name (before: the listed name's tail, which the server does not have).
func TestGatewayGetsMountedPromptOfMangledName(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := ServerConfig{Name: "dp", Transport: TransportStdio, Command: exe, ServeResources: true, Env: map[string]string{mountTestServerEnv: "dottedprompt"}}
	f := mountedFleet(t, cfg)
	ctx := natstest.Ctx(t)
	g := startGateway(t, f.srv, &GatewayOptions{})
	waitMounted(t, g, "w-mounted")
	c := connectClient(t, &sdk.StreamableClientTransport{Endpoint: serveGatewayHTTP(t, g)})

	prompts, err := c.cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := ToolName("dp", "code.review")
	var listed bool
	for _, p := range prompts.Prompts {
		listed = listed || p.Name == name
	}
	if !listed {
		t.Fatalf("prompts %+v: want %s", prompts.Prompts, name)
	}
	got, err := c.cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name})
	if err != nil {
		t.Fatalf("getting the listed prompt %s: %v", name, err)
	}
	if len(got.Messages) != 1 || !strings.Contains(messageText(got.Messages[0]), "review code.review") {
		t.Fatalf("prompt messages %+v: want the server's prompt code.review", got.Messages)
	}
}
