package mcp

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// A mounted server's requests to its client (elicitation/create,
// sampling/createMessage) and its log messages (notifications/message)
// reach the caller of the call they belong to: a worker's client declares
// elicitation and sampling, and passes each request on with toolkit.Ask
// (over the bus, an ask frame; a caller that cannot answer makes it a
// JSON-RPC error to the server) and each log message with toolkit.Log.
//
// MCP does not say which call a request belongs to, so the client
// attributes requests by session: a stateless server's session carries
// one call; on a stateful server's shared session, the one call in
// flight. With several calls (or requests passed on for the gateway,
// ServeMounted) in flight on a shared session a request is refused (its
// error says why). Mount a server that asks its client while its calls
// overlap as stateless (mode: stateless). At most maxPendingAsks
// requests of one call wait for its caller at a time; the server's
// further ones are refused at once, as is a request nested deeper than
// maxMetadataDepth (the bus could not carry it to the caller). A
// server's requests past maxServerAsks unanswered never get here
// (asks.go, answers.go).
//
// Log messages are read off the wire with the progress reports (tap.go),
// in order and before the result: on Streamable HTTP those on a call's
// own response stream are that call's; on stdio, those that come while
// the call is the only request in flight on the connection. Legacy SSE
// has one stream for everything, so its messages are attributed as
// requests are, when the go-sdk hands them over. They are off unless
// ServerConfig.LogLevel is set. A message's data nested deeper than
// maxMetadataDepth is passed on as its JSON text.
//
// A request is put to the caller on the call's own goroutine (the one
// that writes its progress and result), through inflight.do.

// inflight is a call in progress on a session: its context and writer,
// and the writes the call's goroutine runs for the relay. A request
// passed on for the gateway is one with a nil w: it belongs to nobody.
type inflight struct {
	ctx     context.Context
	w       toolkit.Writer
	do      chan func()
	pending atomic.Int32 // requests waiting for the caller
}

// maxPendingAsks bounds the server's requests waiting for the caller of
// one call: the go-sdk takes each on a goroutine of its own, holding its
// params, and a server sending them faster than a person answers would
// otherwise pile them up without end.
const maxPendingAsks = 4

// newInflight is a call's entry; its do queue holds a few log messages.
func newInflight(ctx context.Context, w toolkit.Writer) *inflight {
	return &inflight{ctx: ctx, w: w, do: make(chan func(), 16)}
}

// enter records a call in flight on cs until the returned leave.
func (c *Client) enter(cs *sdk.ClientSession, f *inflight) (leave func()) {
	c.mu.Lock()
	if c.inflight == nil {
		c.inflight = map[*sdk.ClientSession][]*inflight{}
	}
	c.inflight[cs] = append(c.inflight[cs], f)
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		calls := c.inflight[cs]
		for i, g := range calls {
			if g == f {
				calls = append(calls[:i:i], calls[i+1:]...)
				break
			}
		}
		if len(calls) == 0 {
			delete(c.inflight, cs)
		} else {
			c.inflight[cs] = calls
		}
	}
}

// owner is the call a request on cs belongs to, or why there is none.
func (c *Client) owner(cs *sdk.ClientSession) (*inflight, error) {
	c.mu.Lock()
	calls := c.inflight[cs]
	c.mu.Unlock()
	switch {
	case len(calls) == 1 && calls[0].w != nil:
		return calls[0], nil
	case len(calls) == 1:
		return nil, fmt.Errorf("toolbus: the MCP server %q sent a request while serving one passed on for a gateway, which has nobody to ask", c.cfg.Name)
	case len(calls) == 0:
		return nil, fmt.Errorf("toolbus: no call of the MCP server %q is in progress to ask its caller", c.cfg.Name)
	}
	return nil, fmt.Errorf("toolbus: %d calls of the MCP server %q are in progress on one session, so the request cannot be put to the right caller (mount the server with mode: stateless)", len(calls), c.cfg.Name)
}

// relay puts a server's request to the caller of the call it belongs to,
// on the call's goroutine, and decodes the answer into out.
func (c *Client) relay(cs *sdk.ClientSession, method string, params, out any) error {
	f, err := c.owner(cs)
	if err != nil {
		return err
	}
	if f.pending.Add(1) > maxPendingAsks {
		f.pending.Add(-1)
		return fmt.Errorf("toolbus: %d requests of the MCP server %q already wait for the caller of this call", maxPendingAsks, c.cfg.Name)
	}
	defer f.pending.Add(-1)
	// JSON-shaped, as a tool's own requests are: the go-sdk's types have
	// JSON tags only, and content is an interface.
	var shaped map[string]any
	if err := remarshal(params, &shaped); err != nil {
		return err
	}
	if nestedDeeper(shaped, maxMetadataDepth) {
		// Past the bus decoders' depth the caller would never see it, and
		// the server would wait for an answer until the call's deadline.
		return fmt.Errorf("toolbus: the MCP server %q sent a %s request nested deeper than %d levels, which cannot be passed on to the caller", c.cfg.Name, method, maxMetadataDepth)
	}
	params = shaped
	type answer struct {
		v   any
		err error
	}
	got := make(chan answer, 1)
	ask := func() {
		v, err := toolkit.Ask(f.ctx, f.w, method, params)
		got <- answer{v, err}
	}
	select {
	case f.do <- ask:
	case <-f.ctx.Done():
		return context.Cause(f.ctx)
	}
	select {
	case a := <-got:
		if a.err != nil {
			return a.err
		}
		return remarshal(a.v, out)
	case <-f.ctx.Done():
		return context.Cause(f.ctx)
	}
}

func (c *Client) elicit(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	var out sdk.ElicitResult
	if err := c.relay(req.Session, toolkit.MethodElicit, req.Params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) sample(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	var out sdk.CreateMessageResult
	if err := c.relay(req.Session, toolkit.MethodSample, req.Params, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// logMessage passes a server's log message on to the caller of its call,
// unless the call's queue is full (a flood) or there is no one call.
func (c *Client) logMessage(_ context.Context, req *sdk.LoggingMessageRequest) {
	if req.Params == nil {
		return
	}
	f, err := c.owner(req.Session)
	if err == nil {
		m := toolkit.LogMessage{Level: string(req.Params.Level), Logger: req.Params.Logger, Data: shallow(req.Params.Data)}
		select {
		case f.do <- func() { _ = toolkit.Log(f.w, m) }:
			return
		default:
			err = errors.New("the call's queue of log messages is full")
		}
	}
	c.log.Debug("mcp: a log message of the server not passed on", "level", req.Params.Level, "reason", err)
}
