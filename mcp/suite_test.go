package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/bustest"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTransportSuite runs the behaviour suite every transport passes
// through the gateway: a worker serves the suite's toolkit on the bus, a
// gateway serves the fleet over MCP, and the go-sdk's client calls it, one
// MCP session per toolbus session. The gateway is a unary transport (see
// bustest.Transport).
func TestTransportSuite(t *testing.T) {
	cfg := bustest.OverNATS(false, func(t *testing.T, s *embedded.Server, tk *toolkit.Toolkit) toolkit.Caller {
		w, err := bus.Serve(natstest.Connect(t, s), tk, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { w.Stop(natstest.Ctx(t)) })
		g, err := NewGateway(natstest.Ctx(t), natstest.Connect(t, s), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		return &mcpCaller{t: t, g: g, sessions: map[string]*mcpSession{}}
	})
	cfg.Unary = true
	bustest.RunConfig(t, cfg)
}

// mcpCaller is a consumer of the gateway with toolkit.Caller's surface:
// what an agent that speaks MCP sees of the fleet.
type mcpCaller struct {
	t *testing.T
	g *Gateway

	mu       sync.Mutex
	sessions map[string]*mcpSession
}

// mcpSession is one MCP session of the gateway, over in-memory
// transports, and the progress notifications of its calls by token.
type mcpSession struct {
	cs       *sdk.ClientSession
	next     atomic.Int64
	mu       sync.Mutex
	progress map[string]chan *sdk.ProgressNotificationParams
}

func (c *mcpCaller) session(name string) *mcpSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.sessions[name]; s != nil {
		return s
	}
	s := &mcpSession{progress: map[string]chan *sdk.ProgressNotificationParams{}}
	ct, st := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.g.Serve(ctx, st, cmpOr(name, "default")) }()
	client := sdk.NewClient(&sdk.Implementation{Name: "suite"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			s.mu.Lock()
			ch := s.progress[fmt.Sprint(req.Params.ProgressToken)]
			s.mu.Unlock()
			if ch != nil {
				select {
				case ch <- req.Params:
				default: // the call ended; progress is UI-only
				}
			}
		},
	})
	cs, err := client.Connect(natstest.Ctx(c.t), ct, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	s.cs = cs
	c.sessions[name] = s
	return s
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Call runs tools/call and yields the progress notifications as they
// come, then the result as one chunk and the final.
func (c *mcpCaller) Call(ctx context.Context, call toolkit.ToolCall) iter.Seq[toolkit.Event] {
	return func(yield func(toolkit.Event) bool) {
		s := c.session(call.Session)
		token := fmt.Sprintf("p%d", s.next.Add(1))
		progress := make(chan *sdk.ProgressNotificationParams, 64)
		s.mu.Lock()
		s.progress[token] = progress
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.progress, token)
			s.mu.Unlock()
		}()
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type answer struct {
			res *sdk.CallToolResult
			err error
		}
		done := make(chan answer, 1)
		go func() {
			params := &sdk.CallToolParams{Name: call.Name, Arguments: call.Input}
			params.SetProgressToken(token)
			res, err := s.cs.CallTool(cctx, params)
			done <- answer{res, err}
		}()
		var a answer
	wait:
		for {
			select {
			case p := <-progress:
				if !yield(toolkit.Event{Progress: &toolkit.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message}}) {
					cancel()
					<-done
					return
				}
			case a = <-done:
				break wait
			}
		}
		final := c.final(ctx, call, a.res, a.err)
		if len(final.Content) > 0 {
			chunk := toolkit.Chunk{Content: final.Content, State: toolkit.StateRunning}
			if final.State != toolkit.StateSuccess {
				chunk.State = final.State
			}
			if !yield(toolkit.Event{Chunk: &chunk}) {
				return
			}
		}
		yield(toolkit.Event{Final: final})
	}
}

// final reads a tools/call answer back into a toolkit.Response: the
// content as mcp's client side converts it (the gateway's toolbus:data/<id>
// URIs back to block ids), state, code and metadata from _meta. A call
// whose context ended has no answer (MCP drops it): its final is made
// here.
func (c *mcpCaller) final(ctx context.Context, call toolkit.ToolCall, res *sdk.CallToolResult, err error) *toolkit.Response {
	if err != nil {
		if ctx.Err() != nil {
			e := toolkit.ContextError(ctx)
			return toolkit.Final(call.ID, e.Code, e.Message)
		}
		return toolkit.Final(call.ID, toolkit.CodeInternal, "MCP error: "+err.Error())
	}
	chunk := resultChunk(res)
	for i := range chunk.Content {
		b := &chunk.Content[i]
		if id, ok := strings.CutPrefix(b.Name, "toolbus:data/"); ok {
			b.ID, b.Name = id, ""
		}
	}
	r := &toolkit.Response{ID: call.ID, State: toolkit.State(fmt.Sprint(res.Meta[GatewayMetaState])), Content: chunk.Content}
	if code, ok := res.Meta[GatewayMetaCode].(string); ok {
		r.Code = toolkit.Code(code)
	}
	if md, ok := res.Meta[GatewayMetaMetadata].(map[string]any); ok {
		r.Metadata = md
	}
	return r
}

func (c *mcpCaller) Invoke(ctx context.Context, call toolkit.ToolCall) *toolkit.Response {
	var final *toolkit.Response
	for ev := range c.Call(ctx, call) {
		final = ev.Final
	}
	return final
}

// SessionSchemas is tools/list of the session, in the gateway's order.
func (c *mcpCaller) SessionSchemas(ctx context.Context, session string, _ uint64) ([]toolkit.FunctionSchema, error) {
	res, err := c.session(session).cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := make([]toolkit.FunctionSchema, 0, len(res.Tools))
	for _, t := range res.Tools {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, err
		}
		var params map[string]any
		if err := json.Unmarshal(b, &params); err != nil {
			return nil, errors.New("tool " + t.Name + ": input schema is not an object")
		}
		out = append(out, toolkit.FunctionSchema{Type: "function", Function: toolkit.Function{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out, nil
}
