package mcp

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestGatewayMarksIncompleteResults: what a caller over the bus learns
// from a final's code and metadata, an MCP client's model learns from the
// result it reads: a result whose chunks were lost on the way (core NATS
// is at most once) says it is incomplete, and a final with an error code
// (from a worker in another language that left out the state) is an
// error, not a success. A hand-written responder on the real server
// plays the worker.
func TestGatewayMarksIncompleteResults(t *testing.T) {
	f := startFleet(t)
	nc := natstest.Connect(t, f.srv)
	respond := func(subject string, frames ...*wire.Frame) {
		_, err := nc.Subscribe(subject, func(m *nats.Msg) {
			var req wire.Request
			if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &req); err != nil {
				return
			}
			for _, f := range frames {
				f.ID = req.ID
				data, _ := wire.Msgpack.Marshal(f)
				m.Respond(data)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	respond("tools.call.lossy",
		&wire.Frame{Kind: wire.KindChunk, Seq: 1, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "one "}}}},
		&wire.Frame{Kind: wire.KindChunk, Seq: 3, Chunk: &toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "three"}}}},
		&wire.Frame{Kind: wire.KindFinal, Seq: 4, Chunks: 3, Final: &toolkit.Response{State: toolkit.StateSuccess}})
	respond("tools.call.stateless",
		&wire.Frame{Kind: wire.KindFinal, Seq: 1, Final: &toolkit.Response{Code: toolkit.CodeToolError,
			Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "ToolError: disk full"}}}})
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := connectClient(t, gatewayTransport(t, f, "http"))
	ctx, cancel := context.WithTimeout(context.Background(), guardTimeout)
	defer cancel()

	res := callTool(t, ctx, c, "lossy", map[string]any{}, nil)
	if text := resultText(res); !strings.HasPrefix(text, "one three") || !strings.Contains(text, "incomplete") {
		t.Errorf("lossy: %q; want the output and a note that it is incomplete", text)
	}

	res = callTool(t, ctx, c, "stateless", map[string]any{}, nil)
	if !res.IsError {
		t.Errorf("stateless: %q, isError false (meta %v); want an error", resultText(res), res.Meta)
	}
}
