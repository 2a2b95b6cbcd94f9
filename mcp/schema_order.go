package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// Mounted servers' schemas keep their order (toolkit/order.go): the
// go-sdk decodes a server's tools into maps, so the order each tool's
// input schema was written in is read off the wire as the tools/list
// result passes (stdio: the tapped connection; HTTP: the response body of
// a listing's requests, marked in their context) and given to the tool
// when it is registered (toolkit.WithSchemaOrder). A server whose listing
// cannot be read so (legacy SSE, a result over maxListTap) keeps the
// sorted order.

// maxListTap bounds the listing response the HTTP tap keeps to read the
// order from.
const maxListTap = 8 << 20

// schemaOrders is what a client learned of its server's tools' schema
// order, by tool name. Safe for concurrent use.
type schemaOrders struct {
	mu sync.Mutex
	m  map[string][]toolkit.KeyOrder
}

// learn reads a tools/list result.
func (o *schemaOrders) learn(result []byte) {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil || len(r.Tools) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string][]toolkit.KeyOrder{}
	}
	for _, t := range r.Tools {
		if order, err := toolkit.OrderOf(t.InputSchema); err == nil {
			o.m[t.Name] = order
		}
	}
}

// keep forgets the orders of tools other than those listed: a server
// naming its tools anew at every listing would otherwise grow them
// without end.
func (o *schemaOrders) keep(listed []*sdk.Tool) {
	names := make(map[string]bool, len(listed))
	for _, t := range listed {
		names[t.Name] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for n := range o.m {
		if !names[n] {
			delete(o.m, n)
		}
	}
}

// of is the order of a tool's input schema, nil when unknown.
func (o *schemaOrders) of(tool string) []toolkit.KeyOrder {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[tool]
}

// listingKey marks the context of a listing's requests.
type listingKey struct{}

func withListing(ctx context.Context) context.Context {
	return context.WithValue(ctx, listingKey{}, true)
}

func listingOf(ctx context.Context) bool { v, _ := ctx.Value(listingKey{}).(bool); return v }

// listTap passes a listing request's response body through unchanged and
// reads the tools/list result in it: a JSON response at its end (the
// go-sdk reads it whole before decoding it), an event stream line by line
// as it passes. The go-sdk hands a page to its caller as soon as it has
// read the page's event, and reads the rest of the stream (to its end)
// only after, on its own goroutine: an order learned at the stream's end
// could come after the tools were registered (under load, it did).
type listTap struct {
	body   io.ReadCloser
	orders *schemaOrders
	stream bool         // text/event-stream
	buf    bytes.Buffer // JSON: the body so far; stream: the line being read
	from   int          // stream: buf[:from] has no newline
	over   bool
	done   bool
}

func (l *listTap) Read(p []byte) (int, error) {
	n, err := l.body.Read(p)
	if !l.over {
		if l.buf.Len()+n > maxListTap {
			l.over = true
			l.buf = bytes.Buffer{}
		} else {
			l.buf.Write(p[:n])
			if l.stream {
				l.lines()
			}
		}
	}
	if err != nil {
		l.finish()
	}
	return n, err
}

func (l *listTap) Close() error {
	l.finish()
	return l.body.Close()
}

// lines reads the complete lines in buf and drops them, before the bytes
// are handed on (an event is decoded only once its ending blank line has
// been read, after its data line).
func (l *listTap) lines() {
	for {
		data := l.buf.Bytes()
		i := bytes.IndexByte(data[l.from:], '\n')
		if i < 0 {
			l.from = len(data)
			return
		}
		l.line(data[:l.from+i])
		l.buf.Next(l.from + i + 1)
		l.from = 0
	}
}

// line reads one line of an event stream.
func (l *listTap) line(line []byte) {
	if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(bytes.TrimSpace(d), &msg) == nil && msg.Result != nil {
			l.orders.learn(msg.Result)
		}
	}
}

func (l *listTap) finish() {
	if l.done || l.over {
		return
	}
	l.done = true
	if l.stream { // a last line without its newline
		l.line(l.buf.Bytes())
		return
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(l.buf.Bytes(), &msg) == nil && msg.Result != nil {
		l.orders.learn(msg.Result)
	}
}
