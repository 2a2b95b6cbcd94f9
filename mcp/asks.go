package mcp

import (
	"context"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bounds of a server's requests the client has read and not
// answered yet, over stdio and legacy SSE: the go-sdk answers each on a
// goroutine of its own, holding the request, and a stdio server that
// does not read its stdin has every answer wait in its write, an SSE
// server that does not complete the POSTs of the answers every answer
// wait in its POST. Past them the server's requests are dropped unread,
// unanswered.
const (
	maxServerAsks     = 256
	maxServerAskBytes = 4 * MaxMessageBytes
)

// askBound counts a server's requests read and not answered yet (the
// size of their params) on one connection, and drops those past
// maxServerAsks or maxServerAskBytes unread, with a warning (once per
// connection).
type askBound struct {
	log       *slog.Logger
	transport string // in the warning: "stdio", "SSE"

	mu      sync.Mutex
	asks    map[jsonrpc.ID]int
	bytes   int
	dropped int
}

// admit records m when it is a request of the server, and reports
// whether it is to be passed on: not past maxServerAsks or
// maxServerAskBytes.
func (b *askBound) admit(m jsonrpc.Message) bool {
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, dup := b.asks[req.ID]; dup {
		return true // the go-sdk refuses it on the reader's goroutine
	}
	size := len(req.Params)
	if len(b.asks) >= maxServerAsks || b.bytes+size > maxServerAskBytes {
		if b.dropped++; b.dropped == 1 && b.log != nil {
			b.log.Warn("mcp: the "+b.transport+" server sends requests faster than it takes their answers; dropping them unanswered",
				"method", cutText(req.Method, 64), "unanswered", len(b.asks), "max", maxServerAsks)
		}
		return false
	}
	if b.asks == nil {
		b.asks = map[jsonrpc.ID]int{}
	}
	b.asks[req.ID] = size
	b.bytes += size
	return true
}

// answered forgets the server's request id once its answer is written.
func (b *askBound) answered(id jsonrpc.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if size, ok := b.asks[id]; ok {
		delete(b.asks, id)
		b.bytes -= size
	}
}

// askTransport bounds the requests of a legacy SSE server (askBound).
// The go-sdk's SSE client writes each answer as a POST and takes a
// failed one for a broken connection (its jsonrpc2 layer sets the
// connection's write error), so an answer is never failed here: the
// requests past the bound are dropped as they are read, before anything
// answers them, as a stdio server's are.
type askTransport struct {
	inner     sdk.Transport
	log       *slog.Logger
	transport string
}

func (t *askTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &askConn{Connection: c, asks: askBound{log: t.log, transport: t.transport}}, nil
}

type askConn struct {
	sdk.Connection
	asks askBound
}

func (c *askConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	for err == nil && !c.asks.admit(m) {
		m, err = c.Connection.Read(ctx)
	}
	return m, err
}

func (c *askConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if resp, ok := m.(*jsonrpc.Response); ok {
		// No longer waiting once the write returns, whatever came of it.
		defer c.asks.answered(resp.ID)
	}
	return c.Connection.Write(ctx, m)
}
