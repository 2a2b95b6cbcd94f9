package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/codes"

	"github.com/toolbus/toolbus/internal/callspan"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestClientSpanOfHugeServerError: an MCP server that answers a
// tools/call with a JSON-RPC error of 1 MiB had all of it put on the
// client's span as the error status's description: a server, not the
// operator, chose how much each span kept in the exporter's queue. The
// description is cut to callspan.MaxMessage bytes; the call still fails
// tool_error with the server's message.
func TestClientSpanOfHugeServerError(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	srv := sdk.NewServer(&sdk.Implementation{Name: "wordy", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "fail"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: huge}
	})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	rec, tp := spanRecorder()
	c, err := NewClient(ServerConfig{Name: "wordy", Transport: TransportStreamableHTTP, URL: hs.URL}, &Options{Tracer: tp.Tracer("client")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Connect(natstest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	err = c.Call(natstest.Ctx(t), "fail", nil, toolkit.WriterFuncs{})
	if toolkit.CodeOf(err) != toolkit.CodeToolError || !strings.Contains(err.Error(), "xxxx") {
		t.Fatalf("the call: %.200v", err)
	}
	natstest.WaitFor(t, "the call's span", func() bool { return len(rec.Ended()) > 0 })
	st := rec.Ended()[0].Status()
	if st.Code != codes.Error || len(st.Description) > callspan.MaxMessage || !strings.Contains(st.Description, "xxxx") {
		t.Errorf("the span's status: %v, %d bytes of description; want the error status with at most %d bytes of the server's message",
			st.Code, len(st.Description), callspan.MaxMessage)
	}
}
