package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"maps"
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
// order, by tool name and schema: an order is given only to a tool of
// its name whose input schema has the content it was learned with, so
// that a server listing two tools under one name (firstOfEach keeps the
// first) cannot give one the other's order, on one page or on two. Safe
// for concurrent use.
type schemaOrders struct {
	mu sync.Mutex
	m  map[orderKey][]toolkit.KeyOrder
}

// orderKey is a tool's name and the digest of its input schema's content
// (its JSON with the keys sorted, as encoding/json writes a decoded
// value).
type orderKey struct {
	name   string
	schema [sha256.Size]byte
}

func keyOf(name string, schema any) (orderKey, bool) {
	b, err := json.Marshal(schema)
	if err != nil {
		return orderKey{}, false
	}
	return orderKey{name, sha256.Sum256(b)}, true
}

// learn reads a tools/list result. A name it lists again keeps the
// order of its first tool.
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
	learned := make(map[orderKey][]toolkit.KeyOrder, len(r.Tools))
	listed := make(map[string]bool, len(r.Tools))
	for _, t := range r.Tools {
		if listed[t.Name] {
			continue
		}
		listed[t.Name] = true
		var schema any
		if json.Unmarshal(t.InputSchema, &schema) != nil || overSchema(schema) {
			continue // a tool over MaxServerToolBytes is skipped
		}
		k, ok := keyOf(t.Name, schema)
		if order, err := toolkit.OrderOf(t.InputSchema); ok && err == nil {
			learned[k] = order
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[orderKey][]toolkit.KeyOrder{}
	}
	maps.Copy(o.m, learned)
}

// keep forgets the orders of tools other than those listed: a server
// naming its tools anew at every listing (or changing their schemas)
// would otherwise grow them without end.
func (o *schemaOrders) keep(listed []*sdk.Tool) {
	keys := make(map[orderKey]bool, len(listed))
	for _, t := range listed {
		if overSchema(t.InputSchema) {
			continue // none learned
		}
		if k, ok := keyOf(t.Name, t.InputSchema); ok {
			keys[k] = true
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for k := range o.m {
		if !keys[k] {
			delete(o.m, k)
		}
	}
}

// of is the order of the input schema of the tool named tool, nil when
// unknown.
func (o *schemaOrders) of(tool string, schema any) []toolkit.KeyOrder {
	k, ok := keyOf(tool, schema)
	if !ok {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[k]
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
