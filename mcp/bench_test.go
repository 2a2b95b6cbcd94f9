package mcp

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// BenchmarkCall compares a call of the go-sdk peer's echo tool through the
// toolkit (validation, progress routing, result conversion) with a raw
// go-sdk CallTool on an equivalent session, side by side:
//
//	go test -run '^$' -bench BenchmarkCall -benchtime 2000x ./mcp
func BenchmarkCall(b *testing.B) {
	for _, transport := range []string{"streamable-http", "stdio"} {
		b.Run(transport, func(b *testing.B) {
			var cfg ServerConfig
			var raw sdk.Transport
			switch transport {
			case "streamable-http":
				p := startHTTPPeer(b, false)
				cfg = ServerConfig{Name: "go", Transport: TransportStreamableHTTP, URL: p.url()}
				raw = &sdk.StreamableClientTransport{Endpoint: p.url(), HTTPClient: &http.Client{}}
			case "stdio":
				cfg = testServerStdio(b, "go")
				cmd := exec.Command(cfg.Command)
				cmd.Env = append(os.Environ(), testServerEnv+"=stdio")
				raw = &sdk.CommandTransport{Command: cmd}
			}
			if raw != nil {
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(), raw, nil)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = cs.Close() })
				b.Run("raw-go-sdk", func(b *testing.B) { benchRaw(b, cs) })
			}
			tk := toolkit.New(nil)
			c, err := NewClient(cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = c.Close() })
			if err := c.Register(context.Background(), tk); err != nil {
				b.Fatal(err)
			}
			b.Run("toolkit", func(b *testing.B) {
				ctx := context.Background()
				call := toolkit.ToolCall{ID: "c", Name: "mcp__go__echo", Input: map[string]any{"text": "hi"}}
				for b.Loop() {
					if r := tk.Invoke(ctx, call); r.State != toolkit.StateSuccess {
						b.Fatal(r)
					}
				}
			})
		})
	}
}

func benchRaw(b *testing.B, cs *sdk.ClientSession) {
	ctx := context.Background()
	for b.Loop() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

// BenchmarkRegister10k mounts a server listing MaxListedTools (10,000)
// tools: connect, list every page over Streamable HTTP, register in a new
// toolkit:
//
//	go test -run '^$' -bench BenchmarkRegister10k -benchtime 3x ./mcp
func BenchmarkRegister10k(b *testing.B) {
	u := manyToolsServer(b, MaxListedTools, false)
	b.ReportAllocs()
	for b.Loop() {
		func() {
			tk := toolkit.New(nil)
			c, err := NewClient(ServerConfig{Name: "b", Transport: TransportStreamableHTTP, URL: u}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close() // before the server's Close, which waits for its connections
			if err := c.Register(context.Background(), tk); err != nil {
				b.Fatal(err)
			}
			if n := len(c.Tools()); n != MaxListedTools {
				b.Fatalf("%d tools registered, want %d", n, MaxListedTools)
			}
		}()
	}
}
