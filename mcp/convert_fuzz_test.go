package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// FuzzResultChunk: whatever tool result an MCP server sends, its final
// response travels to the caller (a frame that encodes decodes again, or
// the worker is told why it cannot be sent), and the content the gateway
// gives back, when it gives it, is the content the server sent.
func FuzzResultChunk(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a"},{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"t","mimeType":"text/plain"}},{"type":"text","text":"b"}]}`,
		`{"content":[{"type":"image","data":"AQID","mimeType":"image/png"}],"isError":true}`,
		`{"content":[],"structuredContent":{"a":[1,{"b":null}]},"_meta":{"k":"v"}}`,
		`{"content":[],"structuredContent":{"a":` + strings.Repeat("[", 60) + strings.Repeat("]", 60) + `}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var res sdk.CallToolResult
		if json.Unmarshal(data, &res) != nil {
			return
		}
		c := resultChunk(&res)
		var acc toolkit.Accumulator
		if err := acc.Add(&c); err != nil {
			return
		}
		r := acc.Response("c1")
		for _, codec := range []wire.Codec{wire.Msgpack, wire.JSON} {
			body, err := codec.Marshal(&wire.Frame{Kind: wire.KindFinal, ID: "c1", Seq: 1, Final: r})
			if err != nil {
				if !strings.Contains(err.Error(), "reader would refuse") {
					t.Fatalf("%s: %v", codec, err)
				}
				continue
			}
			var fr wire.Frame
			if err := codec.Unmarshal(body, &fr); err != nil {
				t.Fatalf("%s: a final that encodes does not decode: %v", codec, err)
			}
		}
		got, ok := mcpContent(r)
		if !ok {
			return
		}
		a, _ := json.Marshal(got)
		b, _ := json.Marshal(res.Content)
		if string(a) != string(b) {
			t.Fatalf("the gateway gives back other content:\n%s\n%s", b, a)
		}
	})
}
