package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolbus/toolbus/internal/callspan"
	"github.com/toolbus/toolbus/toolkit"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// handler is the toolkit Handler of one MCP tool.
func (c *Client) handler(tool string) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return c.Call(ctx, tool, call.Input, w)
	}
}

// Call runs the server's tool (by its MCP name) with args and streams the
// outcome to w: the server's progress notifications as w.Progress, in
// order and all before the result, then the result as one chunk (see
// resultChunk). A result with isError is written as an error chunk and
// Call returns nil; the final response then has state error and code
// tool_error. Otherwise the returned error says what went wrong, as a
// *toolkit.Error:
//
//   - a JSON-RPC error from the server: tool_error with the server's message;
//   - a result that cannot be read, or a Streamable HTTP response stream
//     that ends without the result: tool_error saying so (the session
//     stays);
//   - the server cannot be reached: unavailable;
//   - the connection failed during the call: tool_error (the next call
//     reconnects);
//   - ServerConfig.Timeout ran out: timeout.
//
// Cancelling ctx cancels the request on the server
// (notifications/cancelled) and returns ctx's error; a shared session
// stays usable. Progress that arrives after the result is dropped.
func (c *Client) Call(ctx context.Context, tool string, args map[string]any, w toolkit.Writer) error {
	if c.opts.Tracer == nil {
		return c.call(ctx, tool, args, w)
	}
	ctx, span := c.opts.Tracer.Start(ctx, "tools/call "+tool, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", tool),
		attribute.String("gen_ai.tool.type", callspan.TypeExtension),
		attribute.String("toolbus.mcp.server", c.cfg.Name),
	))
	ew := &errorSeen{Writer: w}
	err := c.call(ctx, tool, args, ew)
	switch {
	case err != nil:
		code := toolkit.Failure(ctx, err).Code
		callspan.Outcome(span, string(code), code.State() == toolkit.StateError, err.Error())
	case ew.failed:
		callspan.Outcome(span, string(toolkit.CodeToolError), true, "the tool's result is an error")
	}
	span.End()
	return err
}

// errorSeen notes an error chunk written through it.
type errorSeen struct {
	toolkit.Writer
	failed bool
}

// Ask passes requests to the caller on.
func (e *errorSeen) Ask(ctx context.Context, method string, params any) (any, error) {
	return toolkit.Ask(ctx, e.Writer, method, params)
}

// Log passes log messages on.
func (e *errorSeen) Log(m toolkit.LogMessage) error { return toolkit.Log(e.Writer, m) }

func (e *errorSeen) Write(c toolkit.Chunk) error {
	if c.State == toolkit.StateError {
		e.failed = true
	}
	return e.Writer.Write(c)
}

func (c *Client) call(ctx context.Context, tool string, args map[string]any, w toolkit.Writer) error {
	if args == nil {
		args = map[string]any{} // never "arguments": null, which Zod servers reject
	}
	cctx, cancel := context.WithCancel(ctx)
	if c.cfg.Timeout > 0 {
		cctx, cancel = context.WithTimeout(ctx, time.Duration(c.cfg.Timeout))
	}
	defer cancel()
	defer context.AfterFunc(c.life, cancel)() // Close ends the call

	token := c.cfg.Name + "-" + strconv.FormatUint(c.tokens.Add(1), 10)
	sink := c.router.open(token)
	cctx = withCallToken(cctx, token) // the transport's taps tell its messages by it (tap.go)
	defer c.router.close(token)
	params := &sdk.CallToolParams{Name: tool, Arguments: args, Meta: sdk.Meta{"progressToken": token}}
	if lvl := c.cfg.logLevel(); lvl != "" {
		// From protocol 2026-07-28 the level goes with each request
		// (logging/setLevel, sent at initialize, is for the versions
		// before); older servers ignore the key.
		params.Meta[sdk.MetaKeyLogLevel] = lvl
	}
	injectMeta(ctx, params.Meta)

	type outcome struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	f := newInflight(cctx, w) // the server's requests and logs (relay.go)
	var using atomic.Pointer[sdk.ClientSession]
	var last atomic.Pointer[session] // the session of the last attempt
	go func() {
		var o outcome
		o.err = c.withSession(cctx, c.retrySafe(tool), func(cs *sdk.ClientSession) error {
			using.Store(cs)
			last.Store(c.sessionOf(cs))
			defer c.enter(cs, f)()
			var err error
			var status atomic.Int32 // the HTTP answer's
			o.res, err = cs.CallTool(withStatusMark(cctx, &status), params)
			err = received(err, int(status.Load()))
			if err != nil && cctx.Err() == nil && c.resultlessAnswer(cs, err) {
				err = &serverFault{errors.New(errResultless)}
			}
			if err != nil && unreadableAnswer(err) {
				err = &serverFault{fmt.Errorf("the MCP server %q answered, but its result cannot be read: %s", c.cfg.Name, cutText(err.Error(), 512))}
			}
			return err
		})
		done <- o
	}()
	var stuck <-chan time.Time // after the call's end: how long CallTool may take to return

	progress := func() {
		for _, it := range sink.take() {
			if it.log != nil {
				_ = toolkit.Log(w, *it.log) // an unknown level is the server's mistake: dropped
				continue
			}
			if err := w.Progress(it.progress); err != nil {
				cancel() // nobody is listening any more
			}
		}
	}
	ended := cctx.Done()
	for {
		select {
		case <-ended:
			// The call's deadline or cancel: CallTool returns at once,
			// unless its request is stuck in a write to a stdio server that
			// stopped reading, which ignores the context. Such a server is
			// of no further use: killed, the write fails.
			ended = nil
			t := time.NewTimer(stuckAfter)
			defer t.Stop()
			stuck = t.C
		case <-stuck:
			stuck = nil
			if s := c.sessionOf(using.Load()); s != nil && s.cmd != nil {
				c.log.Warn("mcp: killing a stdio server that takes no requests any more", "server", c.cfg.Name, "tool", tool)
				s.kill()
			}
		case <-sink.ready:
			progress()
		case fn := <-f.do:
			fn()
		case o := <-done:
			// Everything that preceded the result on the wire is queued by
			// now; close the sink so nothing can follow the result.
			c.router.close(token)
			progress()
			for len(f.do) > 0 {
				(<-f.do)() // log messages queued before the result
			}
			return c.finish(ctx, cctx, tool, o.res, o.err, w, last.Load())
		}
	}
}

// stuckAfter is how long a call whose context ended may take to return
// before its stdio server is taken for stuck.
const stuckAfter = 2 * time.Second

// sessionOf is the session of cs, shared or one call's; nil if none.
func (c *Client) sessionOf(cs *sdk.ClientSession) *session {
	if cs == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil && c.sess.cs == cs {
		return c.sess
	}
	for s := range c.live {
		if s.cs == cs {
			return s
		}
	}
	return nil
}

// finish ends a call with its outcome; s is the session it was last sent
// on, nil if none.
func (c *Client) finish(ctx, cctx context.Context, tool string, res *sdk.CallToolResult, err error, w toolkit.Writer, s *session) error {
	if err == nil {
		if res == nil {
			return toolkit.Errorf(toolkit.CodeToolError, "Error occurred when calling MCP tool: the server returned no result for '%s'.", tool)
		}
		return w.Write(resultChunk(res))
	}
	if ctx.Err() != nil {
		return ctx.Err() // the caller's cancel or deadline: the toolkit reports it
	}
	if errors.Is(err, ErrClosed) || c.checkOpen() != nil {
		return toolkit.Errorf(toolkit.CodeUnavailable, "MCPServerUnavailable: the MCP server %q has been shut down in this worker.", c.cfg.Name)
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return toolkit.Errorf(toolkit.CodeTimeout, "TimeoutError: the MCP server %q did not finish the tool '%s' within %s; the call was cancelled.", c.cfg.Name, tool, c.cfg.Timeout)
	}
	var ue *unreachableError
	if errors.As(err, &ue) {
		return toolkit.Errorf(toolkit.CodeUnavailable, "MCPServerUnavailable: %v", err)
	}
	var we *jsonrpc.Error
	if isProtocolError(err) && errors.As(err, &we) {
		if unknownTool(we, tool) {
			// The server changed its tools without telling (a stateless
			// one cannot): the registration follows.
			c.relist()
		}
		return toolkit.Errorf(toolkit.CodeToolError, "Error occurred when calling MCP tool: %s", we.Message)
	}
	var sf *serverFault
	if errors.As(err, &sf) {
		return toolkit.Errorf(toolkit.CodeToolError, "Error occurred when calling MCP tool: %v", sf.error)
	}
	var se *json.SyntaxError
	if c.cfg.Transport == TransportStdio && errors.As(err, &se) {
		return toolkit.Errorf(toolkit.CodeToolError, "MCPConnectionError: the MCP server %q wrote something other than JSON-RPC to its stdout during the call of '%s' (%v), which ends its connection; a server must write its logs to stderr. The next call restarts it.", c.cfg.Name, tool, err)
	}
	return toolkit.Errorf(toolkit.CodeToolError, "MCPConnectionError: the connection to the MCP server %q failed during the call of '%s': %v%s. The next call reconnects.", c.cfg.Name, tool, err, s.exitNote(ctx, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)))
}

// retrySafe reports whether the server's annotations make a repeated call
// of tool harmless (read-only or idempotent).
func (c *Client) retrySafe(tool string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.safe[tool]
}

// unknownTool reports whether err is a server's answer that it has no
// tool named tool: invalid params (as the specification has it) naming
// the tool, and saying it is unknown or not found (go-sdk: unknown tool
// "x"; the specification's example: Unknown tool: x; the TypeScript SDK:
// Tool x not found).
func unknownTool(err *jsonrpc.Error, tool string) bool {
	if err.Code != jsonrpc.CodeInvalidParams || !strings.Contains(err.Message, tool) {
		return false
	}
	m := strings.ToLower(err.Message)
	return strings.Contains(m, "unknown") || strings.Contains(m, "not found")
}
