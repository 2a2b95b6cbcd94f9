package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
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

const methodProgress = "notifications/progress"

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
		s.push(toolkit.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
	}
}

// progressSink queues one call's progress reports (unbounded, so the
// connection's reader never waits for the consumer).
type progressSink struct {
	mu     sync.Mutex
	items  []toolkit.Progress
	closed bool
	ready  chan struct{}
}

func (s *progressSink) push(p toolkit.Progress) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.items = append(s.items, p)
	s.mu.Unlock()
	select {
	case s.ready <- struct{}{}:
	default:
	}
}

// take returns and clears the queued reports.
func (s *progressSink) take() []toolkit.Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := s.items
	s.items = nil
	return items
}

// tapTransport wraps a stdio transport so that its connection's reads are
// tapped for progress.
type tapTransport struct {
	inner  sdk.Transport
	router *progressRouter
}

func (t *tapTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, router: t.router}, nil
}

type tapConn struct {
	sdk.Connection
	router *progressRouter
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && req.Method == methodProgress && !req.IsCall() {
		c.router.deliver(req.Params)
	}
	return m, err
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
	line   []byte
	skip   bool // the current line outgrew maxTapLine
	data   [][]byte
	events int
}

func newSSETap(body io.ReadCloser, r *progressRouter) *sseTap {
	return &sseTap{body: body, router: r}
}

func (t *sseTap) Read(p []byte) (int, error) {
	n, err := t.body.Read(p)
	t.feed(p[:n])
	return n, err
}

func (t *sseTap) Close() error { return t.body.Close() }

func (t *sseTap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.appendLine(b)
			return
		}
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
		t.data = nil // the event is not a progress notification we can read
		return
	}
	t.line = append(t.line, b...)
}

func (t *sseTap) endLine(line []byte) {
	switch {
	case len(line) == 0:
		t.dispatch()
	case bytes.HasPrefix(line, []byte("data:")):
		d := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
		t.data = append(t.data, bytes.Clone(d))
	}
}

func (t *sseTap) dispatch() {
	data := bytes.Join(t.data, []byte("\n"))
	t.data = t.data[:0]
	if !bytes.Contains(data, []byte(methodProgress)) {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(data, &msg) == nil && msg.Method == methodProgress && msg.ID == nil {
		t.router.deliver(msg.Params)
	}
}
