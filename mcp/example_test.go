package mcp_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// An MCP server's tools served from a Toolkit. The server here is a
// go-sdk server on a local HTTP listener with one tool that reports
// progress.
func Example() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "demo", Version: "1"}, nil)
	type countIn struct {
		To int `json:"to"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "count", Description: "Count up.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, in countIn) (*sdk.CallToolResult, any, error) {
			for i := 1; i <= in.To; i++ {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: float64(in.To)})
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("counted to %d", in.To)}}}, nil, nil
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	defer hs.Close()

	ctx := context.Background()
	tk := toolkit.New(nil)
	c, err := mcp.NewClient(mcp.ServerConfig{Name: "demo", Transport: mcp.TransportStreamableHTTP, URL: hs.URL}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Start(ctx, tk); err != nil {
		log.Fatal(err)
	}
	t, _ := tk.Get("mcp__demo__count")
	fmt.Println(t.Name, "read-only:", t.ReadOnly())
	for ev := range tk.Call(ctx, toolkit.ToolCall{ID: "c1", Name: "mcp__demo__count", Input: map[string]any{"to": 3}}) {
		switch {
		case ev.Progress != nil:
			fmt.Printf("progress %v/%v\n", ev.Progress.Progress, ev.Progress.Total)
		case ev.Final != nil:
			fmt.Println(ev.Final.State, ev.Final.Text())
		}
	}
	// Output:
	// mcp__demo__count read-only: true
	// progress 1/3
	// progress 2/3
	// progress 3/3
	// success counted to 3
}
