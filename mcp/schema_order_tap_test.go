package mcp

import (
	"io"
	"testing"
)

// The go-sdk hands a listing's page to its caller as soon as it has read
// the page's event, before it reads the end of the stream (and it reads
// that end on another goroutine, which load may deschedule): the tap must
// have learned the order by the time the event's bytes are read.
func TestListTapLearnsAsTheEventPasses(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	var o schemaOrders
	tap := &listTap{body: pr, orders: &o, stream: true}
	go pw.Write([]byte("event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"ordered\",\"inputSchema\":{\"type\":\"object\",\"properties\":{\"zeta\":{},\"alpha\":{}}}}]}}\n\n"))
	buf := make([]byte, 4096)
	if _, err := tap.Read(buf); err != nil {
		t.Fatal(err)
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"zeta": map[string]any{}, "alpha": map[string]any{}}}
	if o.of("ordered", schema) == nil { // the stream has not ended: no EOF, no Close
		t.Fatal("the order is learned only at the end of the stream, after the go-sdk has handed the page on")
	}
}
