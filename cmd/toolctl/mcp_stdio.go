package main

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioDrain bounds how long `mcp stdio` answers the requests in flight
// once its stdin has ended.
const stdioDrain = 30 * time.Second

// drainTransport is a stdio transport that answers what it was asked
// before it ends: the SDK ends a session, and cancels its requests, when
// the read side ends, so a client that writes its requests and closes
// stdin (a script, a pipe) would get no answers. Its connection holds
// back the end of the input until every request read has had its
// response written, or until drain has passed.
//
// The SDK's stdio connection is wrapped, so it no longer hears of the
// negotiated protocol version, by which it refuses JSON-RPC batches from
// 2025-06-18 on: they are answered, as under earlier versions.
type drainTransport struct {
	sdk.Transport
	drain time.Duration
}

func (t drainTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &drainConn{Connection: c, drain: t.drain, pending: map[jsonrpc.ID]bool{}, idle: make(chan struct{}, 1), closed: make(chan struct{})}, nil
}

type drainConn struct {
	sdk.Connection
	drain time.Duration

	mu        sync.Mutex
	pending   map[jsonrpc.ID]bool // requests read and not answered
	idle      chan struct{}       // a token when pending became empty
	closed    chan struct{}
	closeOnce sync.Once
}

func (c *drainConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if errors.Is(err, io.EOF) {
		c.wait(ctx)
		return nil, err
	}
	if r, ok := m.(*jsonrpc.Request); ok && r.IsCall() {
		c.mu.Lock()
		c.pending[r.ID] = true
		c.mu.Unlock()
	}
	return m, err
}

// wait waits until no request is unanswered, for at most c.drain.
func (c *drainConn) wait(ctx context.Context) {
	t := time.NewTimer(c.drain)
	defer t.Stop()
	for {
		c.mu.Lock()
		n := len(c.pending)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-c.idle:
		case <-t.C:
			return
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *drainConn) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if r, ok := m.(*jsonrpc.Response); ok {
		c.mu.Lock()
		delete(c.pending, r.ID)
		if len(c.pending) == 0 {
			select {
			case c.idle <- struct{}{}:
			default:
			}
		}
		c.mu.Unlock()
	}
	return err
}

func (c *drainConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}
