package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/toolkit"
)

// Progress routing.
//
// The go-sdk hands progress notifications to one handler per Client, on a
// goroutine of its own, so a notification can reach that handler after
// CallTool has already returned the result that followed it on the wire.
// To deliver every progress report before the final response, in order,
// this package reads them off the wire itself: the stdio connection is
// wrapped (tapConn) and HTTP event-stream bodies are tapped (sseTap). Both
// see the messages in wire order and route each progress notification to
// its call's sink before the SDK can see the response that follows it.
// Once a call's CallTool returns, its sink is closed and anything later is
// dropped.

const (
	methodProgress  = "notifications/progress"
	methodLog       = "notifications/message"
	methodCancelled = "notifications/cancelled"
	methodListen    = "subscriptions/listen"
)

// progressRouter maps progress tokens (strings this package generates) to
// the sinks of calls in flight. Safe for concurrent use.
type progressRouter struct {
	mu    sync.Mutex
	sinks map[string]*progressSink
}

func (r *progressRouter) open(token string) *progressSink {
	s := &progressSink{ready: make(chan struct{}, 1)}
	r.mu.Lock()
	if r.sinks == nil {
		r.sinks = map[string]*progressSink{}
	}
	r.sinks[token] = s
	r.mu.Unlock()
	return s
}

// close unregisters token and closes its sink; later progress is dropped.
func (r *progressRouter) close(token string) {
	r.mu.Lock()
	s := r.sinks[token]
	delete(r.sinks, token)
	r.mu.Unlock()
	if s != nil {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
	}
}

type wireProgress struct {
	Token    any     `json:"progressToken"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
	Message  string  `json:"message"`
}

// deliverLog routes the params of one log notification (MCP
// LoggingMessageParams) to the sink of the call token. It never blocks.
func (r *progressRouter) deliverLog(token string, params json.RawMessage) {
	var m toolkit.LogMessage
	if json.Unmarshal(params, &m) != nil || m.Level == "" {
		return
	}
	m.Data = shallow(m.Data)
	r.mu.Lock()
	s := r.sinks[token]
	r.mu.Unlock()
	if s != nil {
		s.add(sinkItem{log: &m, size: len(params)})
	}
}

// deliver routes the params of one progress notification. It never
// blocks: the sink queues.
func (r *progressRouter) deliver(params json.RawMessage) {
	var p wireProgress
	if json.Unmarshal(params, &p) != nil {
		return
	}
	tok, ok := p.Token.(string)
	if !ok {
		return // not one of ours: we only send string tokens
	}
	r.mu.Lock()
	s := r.sinks[tok]
	r.mu.Unlock()
	if s != nil {
		s.add(sinkItem{progress: toolkit.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}, size: len(params)})
	}
}

// progressSink queues one call's progress reports and log messages, in
// wire order, so the connection's reader never waits for the consumer.
// The queue is bounded (sinkMaxItems, sinkMaxBytes; one item is always
// taken): a server sending faster than the caller takes them has a newer
// progress report replace the last item queued when that is a progress
// report (progress says how far the call is, the latest is what counts),
// and other items dropped; the consumer is told how many were lost
// (take).
type progressSink struct {
	mu      sync.Mutex
	items   []sinkItem
	bytes   int // the queued items' size
	dropped int // items lost to the bound since the last take
	closed  bool
	ready   chan struct{}
}

// The bounds of one call's queue of progress reports and log messages.
const (
	sinkMaxItems = 1024
	sinkMaxBytes = 1 << 20
)

// sinkItem is a progress report, or a log message when log is set.
type sinkItem struct {
	progress toolkit.Progress
	log      *toolkit.LogMessage
	size     int // of the notification's params on the wire
}

func (s *progressSink) add(it sinkItem) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	n := len(s.items)
	switch {
	case n == 0 || (n < sinkMaxItems && s.bytes+it.size <= sinkMaxBytes):
		// One item is always taken: the caller is not behind.
		s.items = append(s.items, it)
		s.bytes += it.size
	case it.log == nil && n > 0 && s.items[n-1].log == nil:
		s.bytes += it.size - s.items[n-1].size
		s.items[n-1] = it
		s.dropped++
	default:
		s.dropped++
	}
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// take returns and clears the queued items, after a warning when some
// were dropped since the last take.
func (s *progressSink) take() []sinkItem {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := s.items
	if s.dropped > 0 {
		items = append(items, sinkItem{log: &toolkit.LogMessage{Level: "warning", Logger: "toolbus",
			Data: fmt.Sprintf("the MCP server sent progress and log notifications faster than they were delivered: %d were dropped", s.dropped)}})
	}
	s.items, s.bytes, s.dropped = nil, 0, 0
	return items
}

// tapTransport wraps a stdio transport so that its connection's reads are
// tapped for progress.
type tapTransport struct {
	inner  sdk.Transport
	router *progressRouter
	orders *schemaOrders
	log    *slog.Logger
}

func (t *tapTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, router: t.router, orders: t.orders, log: t.log, asks: askBound{log: t.log, transport: "stdio"}}, nil
}

type tapConn struct {
	sdk.Connection
	router *progressRouter
	log    *slog.Logger

	mu sync.Mutex
	// requests in flight but the long-lived subscriptions/listen: JSON-RPC
	// id → call token ("" for requests other than tools/call); retired by
	// their response or the client's cancel
	calls map[jsonrpc.ID]string
	// tools/list requests in flight, whose results carry the schemas'
	// order (schema_order.go)
	orders *schemaOrders
	lists  map[jsonrpc.ID]bool
	// asks bounds the server's requests read and not answered yet
	// (asks.go)
	asks askBound
}

func (c *tapConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if resp, ok := m.(*jsonrpc.Response); ok {
		// The answer to a request of the server: it is no longer waiting
		// once the write returns, whatever came of it.
		defer c.asks.answered(resp.ID)
	}
	if req, ok := m.(*jsonrpc.Request); ok {
		c.mu.Lock()
		switch {
		case req.Method == methodListen:
			// Open for the session's life (protocol 2026-07-28): no one's.
		case req.IsCall():
			if c.calls == nil {
				c.calls = map[jsonrpc.ID]string{}
			}
			c.calls[req.ID] = callTokenOf(ctx)
			if req.Method == "tools/list" && c.orders != nil {
				if c.lists == nil {
					c.lists = map[jsonrpc.ID]bool{}
				}
				c.lists[req.ID] = true
			}
		case req.Method == methodCancelled:
			// No response comes for a cancelled request.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					delete(c.calls, id)
				}
			}
		}
		c.mu.Unlock()
	}
	return c.Connection.Write(ctx, m)
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	for err == nil && !c.asks.admit(m) {
		m, err = c.Connection.Read(ctx)
	}
	switch msg := m.(type) {
	case *jsonrpc.Request:
		switch {
		case msg.IsCall():
		case msg.Method == methodProgress:
			c.router.deliver(msg.Params)
		case msg.Method == methodLog:
			// A log message belongs to the one call in flight on the
			// connection, if it is the only request in flight.
			c.mu.Lock()
			token := ""
			if len(c.calls) == 1 {
				for _, t := range c.calls {
					token = t
				}
			}
			c.mu.Unlock()
			if token != "" {
				c.router.deliverLog(token, msg.Params)
			}
		}
	case *jsonrpc.Response:
		markResultless(msg)
		c.mu.Lock()
		delete(c.calls, msg.ID)
		list := c.lists[msg.ID]
		delete(c.lists, msg.ID)
		c.mu.Unlock()
		if list && msg.Error == nil {
			c.orders.learn(msg.Result)
		}
	}
	return m, err
}

// markResultless makes a response holding neither a result nor an error (JSON-RPC
// requires one) the server's error answer. The go-sdk decodes the missing
// result as io.EOF, which reads as the connection's end: the session,
// sound, was dropped (a stdio server killed with every call on it) and a
// read-only request sent again.
func markResultless(r *jsonrpc.Response) {
	if r.Error == nil && len(r.Result) == 0 {
		r.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: errResultless}
	}
}

// errResultless is the message of a response that answered nothing.
const errResultless = "the MCP server answered without a result (its JSON-RPC response holds neither a result nor an error)"

// callTokenKey carries a call's token in the context of its tools/call
// request, which the go-sdk passes to the transport (the connection's
// Write, the HTTP request).
type callTokenKey struct{}

// withCallToken marks ctx as the call token's.
func withCallToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, callTokenKey{}, token)
}

// callTokenOf is the call token ctx is marked with, "" for none.
func callTokenOf(ctx context.Context) string {
	t, _ := ctx.Value(callTokenKey{}).(string)
	return t
}

// maxTapLine bounds how much of one event-stream line the tap buffers;
// progress notifications are far smaller, and longer lines (large
// results) pass through unexamined.
const maxTapLine = 64 << 10

// sseTap passes an event-stream body through unchanged while parsing its
// events and routing progress notifications, synchronously, before the
// bytes reach the reader.
type sseTap struct {
	body   io.ReadCloser
	router *progressRouter
	token  string // the call whose response stream this is, "" for others
	line   []byte
	skip   bool // the current line outgrew maxTapLine
	data   [][]byte
	size   int  // of data
	over   bool // the event outgrew maxTapLine: not a notification
	// event: the bytes of the event being read, all its lines; past
	// maxEventBytes the stream fails (Read).
	event int
}

// maxEventBytes bounds one event of a stream: the go-sdk refuses an event
// past MaxMessageBytes, but then reads the rest of the stream to discard
// it, and an event that never ends never lets it go (nor the call). A
// little over the go-sdk's bound, so that its own error comes first.
const maxEventBytes = MaxMessageBytes + 64<<10

// newSSETap taps body, the event stream of the call token's request (""
// for another request's, or the standalone stream): the log messages on a
// call's stream are that call's.
func newSSETap(body io.ReadCloser, r *progressRouter, token string) *sseTap {
	return &sseTap{body: body, router: r, token: token}
}

func (t *sseTap) Read(p []byte) (int, error) {
	if t.event > maxEventBytes {
		return 0, errEventTooLarge
	}
	n, err := t.body.Read(p)
	t.feed(p[:n])
	return n, err
}

var errEventTooLarge = fmt.Errorf("mcp: an event of the server's stream is over %d MiB (MaxMessageBytes)", MaxMessageBytes>>20)

func (t *sseTap) Close() error { return t.body.Close() }

func (t *sseTap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.event += len(b)
			t.appendLine(b)
			return
		}
		t.event += i + 1
		t.appendLine(b[:i])
		b = b[i+1:]
		if !t.skip {
			t.endLine(bytes.TrimSuffix(t.line, []byte("\r")))
		}
		t.line, t.skip = t.line[:0], false
	}
}

func (t *sseTap) appendLine(b []byte) {
	if t.skip {
		return
	}
	if len(t.line)+len(b) > maxTapLine {
		t.skip, t.line = true, t.line[:0]
		t.data, t.over = nil, true // the event is not a progress notification we can read
		return
	}
	t.line = append(t.line, b...)
}

func (t *sseTap) endLine(line []byte) {
	switch {
	case len(line) == 0:
		t.event = 0
		t.dispatch()
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		if t.size += len(d) + 1; t.size > maxTapLine {
			t.over = true // an event of many lines is not a notification either
		}
		if t.over {
			t.data = nil
			return
		}
		t.data = append(t.data, bytes.Clone(d))
	}
}

func (t *sseTap) dispatch() {
	over := t.over
	t.size, t.over = 0, false
	if over {
		return
	}
	data := bytes.Join(t.data, []byte("\n"))
	t.data = t.data[:0]
	isLog := t.token != "" && bytes.Contains(data, []byte(methodLog))
	if !bytes.Contains(data, []byte(methodProgress)) && !isLog {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &msg) != nil || msg.ID != nil {
		return
	}
	switch {
	case msg.Method == methodProgress:
		t.router.deliver(msg.Params)
	case msg.Method == methodLog && isLog:
		t.router.deliverLog(t.token, msg.Params)
	}
}
