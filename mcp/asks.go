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

	mu sync.Mutex
	// asks holds the params' size of each request read and not answered,
	// by id: a server may reuse the id of one whose answer is being
	// written (the go-sdk takes it as free then), and each holds its
	// answer's goroutine.
	asks    map[jsonrpc.ID][]int
	n       int // requests in asks
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
	// One whose id is waiting for its answer counts as well: the go-sdk
	// refuses it (an answer without an id, see answered) when it has not
	// started writing the earlier one's answer, and answers it as a new
	// request once it has.
	size := len(req.Params)
	if b.n >= maxServerAsks || b.bytes+size > maxServerAskBytes {
		if b.dropped++; b.dropped == 1 && b.log != nil {
			b.log.Warn("mcp: the "+b.transport+" server sends requests faster than it takes their answers; dropping them unanswered",
				"method", cutText(req.Method, 64), "unanswered", b.n, "max", maxServerAsks)
		}
		return false
	}
	if b.asks == nil {
		b.asks = map[jsonrpc.ID][]int{}
	}
	b.asks[req.ID] = append(b.asks[req.ID], size)
	b.n++
	b.bytes += size
	return true
}

// answered forgets one of the server's requests of id once its answer is
// written. An answer without an id is the go-sdk's refusal of a request
// whose id was waiting: it forgets one of an id read more than once.
func (b *askBound) answered(id jsonrpc.ID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !id.IsValid() {
		for k, sizes := range b.asks {
			if len(sizes) > 1 {
				id = k
				break
			}
		}
	}
	sizes := b.asks[id]
	if len(sizes) == 0 {
		return
	}
	b.n--
	b.bytes -= sizes[len(sizes)-1]
	if len(sizes) == 1 {
		delete(b.asks, id)
	} else {
		b.asks[id] = sizes[:len(sizes)-1]
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
