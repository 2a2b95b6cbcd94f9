package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// MaxServerToolBytes counted a tool's name, description and schema as
// JSON, not what the worker's announcement adds to each (its group,
// idempotency, kind, the schema's key order, the field names) nor that
// the announcement is msgpack, where a number takes 9 bytes: a server
// listing MaxListedTools small tools, or a few schemas of many numbers,
// stayed under it, and the announcement of its worker was over the NATS
// server's max_payload, so the worker could not start (bus.Serve
// failed). Each tool's entry of the announcement is counted.
func TestServerToolsFitTheAnnouncement(t *testing.T) {
	t.Run("many", func(t *testing.T) {
		tools := make([]*sdk.Tool, 0, MaxListedTools)
		for i := range MaxListedTools - 10 {
			tools = append(tools, &sdk.Tool{Name: fmt.Sprintf("t%04d", i), InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)})
		}
		announceTools(t, tools)
	})
	// A number is 9 bytes of msgpack: three schemas of 160 KB of JSON
	// each were announced in over a MiB.
	t.Run("numbers", func(t *testing.T) {
		enum := "[" + strings.Repeat("0.5,", 40_000) + "0.5]"
		var tools []*sdk.Tool
		for i := range 3 {
			tools = append(tools, &sdk.Tool{Name: fmt.Sprint("n", i), InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number","enum":` + enum + `}}}`)})
		}
		announceTools(t, tools)
	})
}

func announceTools(t *testing.T, tools []*sdk.Tool) {
	srv := newTestServer(nil)
	answerLists(srv, func(int64) *sdk.ListToolsResult { return &sdk.ListToolsResult{Tools: tools} })
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	c := newTestClient(t, ServerConfig{Name: "many", Transport: TransportStreamableHTTP, URL: hs.URL})
	if err := c.Register(testCtx(t), tk); err != nil {
		t.Fatal(err)
	}
	if len(c.Tools()) == 0 {
		t.Fatal("no tool registered")
	}
	t.Logf("%d of %d tools registered", len(c.Tools()), len(tools))
	w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
	if err != nil {
		t.Fatalf("the worker mounting a server of %d tools (%d registered) cannot start: %v", len(tools), len(c.Tools()), err)
	}
	w.Stop(context.Background())
}
