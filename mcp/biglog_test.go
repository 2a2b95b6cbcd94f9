package mcp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

func init() {
	if os.Getenv(mountTestServerEnv) == "biglog" {
		srv := sdk.NewServer(&sdk.Implementation{Name: "biglog", Version: "1"}, nil)
		sdk.AddTool(srv, &sdk.Tool{Name: "biglog", Description: "Log one large message."},
			func(ctx context.Context, req *sdk.CallToolRequest, in args) (*sdk.CallToolResult, any, error) {
				if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: "info", Data: strings.Repeat("x", 1200<<10)}); err != nil {
					return nil, nil, err
				}
				return textResult("logged"), nil, nil
			})
		_ = srv.Run(context.Background(), &sdk.StdioTransport{})
		os.Exit(0)
	}
}

// One log message of more than sinkMaxBytes (1 MiB) to a caller that is
// not behind at all (in process: no bus limit involved) is dropped: the queue is empty, yet add compares
// bytes+size with the bound and drops the item; the caller gets "1 were
// dropped" instead of the message (before: delivered).
// One log message over the queue's byte bound was dropped although the
// caller was not behind at all.
func TestOneLargeLogDelivered(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tk, _ := mount(t, ServerConfig{Name: "big", Transport: TransportStdio, Command: exe, LogLevel: "info", Env: map[string]string{mountTestServerEnv: "biglog"}})
	var logs []string
	var final *toolkit.Response
	for ev := range tk.Call(testCtx(t), toolkit.ToolCall{ID: "b", Name: ToolName("big", "biglog")}) {
		if ev.Log != nil {
			logs = append(logs, fmt.Sprint(ev.Log.Data))
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final == nil || final.Text() != "logged" {
		t.Fatalf("final %+v", final)
	}
	if len(logs) != 1 || len(logs[0]) < 1200<<10 {
		short := make([]string, len(logs))
		for i, l := range logs {
			short[i] = fmt.Sprintf("%.100q (%d bytes)", l, len(l))
		}
		t.Fatalf("logs delivered: %v; want the server's one message", short)
	}
}
