package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/callspan"
	"github.com/toolbus/toolbus/toolkit"
)

// gatewaySession is one MCP session: its own go-sdk Server, holding the
// tools the session may see, so that adding and removing them notifies
// exactly that session.
type gatewaySession struct {
	g        *Gateway
	id       string
	identity string      // the caller identity it calls as
	c        *bus.Client // the identity's
	srv      *sdk.Server
	// calling counts the session's requests running that reach the
	// fleet: tools/call, resource, prompt and completion requests
	// (GatewayOptions.MaxSessionCalls and MaxCalls, enter); under g.callMu.
	calling int
	// source is what the session counts toward in the shares of
	// GatewayOptions.MaxSessions (sourceOf; "" over transports other than
	// HTTP); evicted, under g.mu, that makeRoom ended it for another
	// source's; claim, set before it is served, makeRoom's admission of
	// it, which track takes.
	source  string
	evicted bool
	claim   *claim
	// A session's calls are cancelled, on the bus too, when it ends (ctx:
	// its DELETE, the cause errSessionDeleted; or it closed; the cause
	// errSessionIdle or errSessionEvicted when the gateway's bounds end it,
	// errGatewayClosed when its Close does), when the gateway
	// closes and when the listener that opened it stops (listener:
	// ServeListener's context, or Serve's): the go-sdk closes a session
	// only once its requests have returned, and does not cancel them
	// itself.
	ctx      context.Context
	end      context.CancelCauseFunc
	listener context.Context

	// HTTP requests of the session in flight, and the timer that ends the
	// session once none has been for the session timeout (idleClose). An
	// open event stream counts, which the go-sdk's own idle timer (off)
	// does not: a client that only listens keeps its session.
	idleMu sync.Mutex
	active int
	idle   *time.Timer
	idleAt time.Time // when idle is due
	// calls are those of the active requests that may carry a call (all
	// but the session's own event stream, carriesCall), and quiet, when
	// not nil, is closed once there are none (quietCalls); used is g.uses
	// at the last start or end of a request, for makeRoom.
	calls int
	quiet chan struct{}
	used  uint64

	mu    sync.Mutex        // serialises refreshes
	tools map[string]string // registered tool name → its JSON, to spot changes
	// aliases: a listed name → the fleet tool it calls (ExposeServers);
	// replaced whole by each refresh
	aliases atomic.Pointer[map[string]string]
	// skills: registered skill (prompt and resource) → its description
	// and group, to spot changes (gateway_skills.go)
	skills map[string]string
	// listed is what tools/list answers: the registered tools in the
	// session's order (the fleet's, as bus.Client.SessionSchemas gives it),
	// replaced whole at the end of each refresh.
	listed atomic.Pointer[[]*sdk.Tool]
	// updates are the resource updates waiting to be told to the session
	// (gateway_mounted.go).
	updates *updateQueue
	// subs are the resource URIs the session is subscribed to, and
	// subsBytes their bytes: at most maxSessionSubscriptions
	// (gateway_mounted.go).
	subsMu    sync.Mutex
	subs      map[string]struct{}
	subsBytes int
	// posts are the contexts of the session's POSTs in flight, by the
	// token post set in their headerPost.
	postMu  sync.Mutex
	posts   map[string]context.Context
	postSeq uint64
}

// middleware answers tools/list in the session's order (the go-sdk's own
// list is sorted by name; a model reads tools in the order given, and
// the skill viewer and reset_tools come first), and sends every tools/call
// to the fleet itself: one of a tool the session does not list, so the
// model hears why in toolbus's words (not_found, or group_inactive with
// what to do) rather than a JSON-RPC "unknown tool"; and one of a tool it
// lists, which the go-sdk server may not have yet (refresh stores the
// list before it changes the server's tools). The server's tools are
// there for its list_changed notifications.
//
// It also tracks the session from its first request (initialize): a
// client need not send notifications/initialized for the go-sdk to serve
// it, and an untracked session's calls are not cancelled when it ends.
func (s *gatewaySession) middleware(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if ss, ok := req.GetSession().(*sdk.ServerSession); ok && ss != nil {
			if err := s.g.track(s, ss); err != nil {
				return nil, err
			}
		}
		switch r := req.(type) {
		case *sdk.ListToolsRequest:
			if p := s.listed.Load(); p != nil && (r.Params == nil || r.Params.Cursor == "") {
				return &sdk.ListToolsResult{Tools: *p}, nil
			}
		case *sdk.CallToolRequest:
			if r.Params != nil {
				return s.call(ctx, r)
			}
		case *sdk.ListPromptsRequest, *sdk.GetPromptRequest, *sdk.ListResourcesRequest, *sdk.ListResourceTemplatesRequest,
			*sdk.ReadResourceRequest, *sdk.SubscribeRequest, *sdk.CompleteRequest:
			// They read the session's groups and skills and ask the
			// mounted servers over the bus: the same bound as calls.
			leave, over := s.enter()
			defer leave()
			if over != "" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
					"TooManyCallsError: %s; this %s was not served. Wait for one to end, then send it again.", over, method)}
			}
			var end context.CancelFunc
			ctx, end = s.bound(ctx, req.GetExtra())
			defer end()
		}
		if res, handled, err := s.mountedMiddleware(ctx, method, req, next); handled {
			return res, err
		}
		return next(ctx, method, req)
	}
}

// enter counts a request of the session that reaches the fleet (a
// tools/call, or a resource, prompt or completion request) until leave,
// toward GatewayOptions.MaxSessionCalls and GatewayOptions.MaxCalls; over
// is "" within them, else which bound it is past, in words, and the
// request must not be served. A refused request takes no place under
// either bound, not even for a moment (leave does nothing for it): one
// past its session's bound counted under the gateway's, or the reverse,
// turned away other sessions' requests (or the session's own) that fit.
func (s *gatewaySession) enter() (leave func(), over string) {
	g := s.g
	g.callMu.Lock()
	defer g.callMu.Unlock()
	switch {
	case g.opts.MaxSessionCalls > 0 && s.calling >= g.opts.MaxSessionCalls:
		return func() {}, fmt.Sprintf("this session already runs %d requests (tool calls, resource, prompt and completion requests), the gateway's bound for one session", g.opts.MaxSessionCalls)
	case g.opts.MaxCalls > 0 && g.calling >= g.opts.MaxCalls:
		return func() {}, fmt.Sprintf("the gateway already runs %d requests (tool calls, resource, prompt and completion requests) for all its sessions, its bound", g.opts.MaxCalls)
	}
	s.calling++
	g.calling++
	return func() {
		g.callMu.Lock()
		s.calling--
		g.calling--
		g.callMu.Unlock()
	}, ""
}

// bound is ctx, ended also when the session ends, the gateway closes or
// the listener that opened the session stops: the go-sdk closes a
// session only once its requests have returned, and does not cancel
// them itself. Over HTTP it ends too when the POST that carried the
// request goes away while its answer could reach the client by that
// POST's stream only (postContext): the go-sdk would run it on for
// nobody. The gateway's own stop (Interrupt, Close, the listener's end)
// ends it with the cause errGatewayStopped, and the session's end with
// the session's cause (stoppedFinal). end releases it.
func (s *gatewaySession) bound(ctx context.Context, extra *sdk.RequestExtra) (_ context.Context, end context.CancelFunc) {
	ctx, cancelCause := context.WithCancelCause(ctx)
	cancel := func() { cancelCause(nil) }
	stopped := func() { cancelCause(errGatewayStopped) }
	ended := func() { cancelCause(context.Cause(s.ctx)) }
	stops := []func() bool{context.AfterFunc(s.ctx, ended), context.AfterFunc(s.g.calls, stopped)}
	if s.listener != nil {
		stops = append(stops, context.AfterFunc(s.listener, stopped))
	}
	if post := s.postContext(extra); post != nil {
		stops = append(stops, context.AfterFunc(post, cancel))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// errGatewayStopped is the cause of a call's context ended by the
// gateway's own stop; errSessionIdle (and errSessionEvicted) that of a
// session's, and so its calls', ended by SessionTimeout (by makeRoom),
// errSessionDeleted that of one its client ended (DELETE), and
// errGatewayClosed that of one Close ended.
var (
	errGatewayStopped = errors.New("mcp: gateway stopped")
	errSessionIdle    = errors.New("mcp: gateway: session closed, idle for the session timeout")
	errSessionDeleted = errors.New("mcp: gateway: session ended by its client (DELETE)")
)

// stoppedFinal is final with the gateway's text for why it ended ctx
// (stoppedText) in place of the interrupted text it ends with: the
// worker (or the bus client, for a worker that did not answer the cancel
// in time) took the gateway's cancel for the user's. The output before
// it is kept.
func stoppedFinal(ctx context.Context, final *toolkit.Response) *toolkit.Response {
	text := stoppedText(context.Cause(ctx))
	if final.Code != toolkit.CodeInterrupted || text == "" || len(final.Content) == 0 {
		return final
	}
	last := &final.Content[len(final.Content)-1]
	if last.Type != toolkit.BlockText || !strings.HasSuffix(last.Text, toolkit.InterruptedText) {
		return final
	}
	last.Text = strings.TrimSuffix(last.Text, toolkit.InterruptedText) + text
	return final
}

// stoppedText is the text that ends a call the gateway ended for cause:
// its stop, or its bounds closing the call's session; "" for another
// cause (the user's cancel, the session's DELETE).
func stoppedText(cause error) string {
	switch {
	case errors.Is(cause, errGatewayStopped), errors.Is(cause, errGatewayClosed):
		return GatewayStoppedText
	case errors.Is(cause, errSessionIdle):
		return GatewayIdleClosedText
	case errors.Is(cause, errSessionEvicted):
		return GatewayMadeRoomText
	}
	return ""
}

// refresh makes the session's server hold exactly the tools the session
// may see now (its group state at least at revision minRev, and at least
// at its last reset_tools through the gateway); the go-sdk sends
// list_changed for any difference. When the group state cannot be read
// the list is left as it is (initial: the groups active by default).
func (s *gatewaySession) refresh(ctx context.Context, initial bool, minRev uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.g
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, gatewaySyncTimeout)
	defer cancel()
	schemas, err := s.c.SessionSchemas(ctx, s.id, minRev)
	if err != nil {
		// Ended by the gateway closing (or the request going away), not
		// by a failure: nobody is left to tell, so nothing to warn of.
		if outer.Err() == nil {
			g.log.Warn("mcp: gateway: cannot list the session's tools; its tool list is not refreshed",
				"session", s.id, "err", err)
		}
		if !initial {
			return
		}
		c := g.fleet.Catalog()
		schemas = c.Schemas(toolkit.DefaultGroups(c.Groups))
		s.refreshSkills(toolkit.DefaultGroups(c.Groups))
	} else if active, err := s.c.ActiveGroups(ctx, s.id, minRev); err == nil {
		s.refreshSkills(active)
	}
	want := make(map[string]*sdk.Tool, len(schemas))
	order := make([]string, 0, len(schemas))
	aliases := g.exposedNames(schemas)
	for _, fs := range schemas {
		t, err := g.mcpTool(fs)
		if err != nil {
			g.log.Warn("mcp: gateway: skipping a tool", "tool", fs.Function.Name, "err", err)
			continue
		}
		for alias, name := range aliases {
			if name == t.Name {
				t.Name = alias
			}
		}
		want[t.Name] = t
		order = append(order, t.Name)
	}
	s.aliases.Store(&aliases)
	var gone []string
	for name := range s.tools {
		if _, ok := want[name]; !ok {
			gone = append(gone, name)
		}
	}
	changed := map[string]string{}
	listed := make([]*sdk.Tool, 0, len(order))
	for _, name := range order {
		b, _ := json.Marshal(want[name])
		if s.tools[name] != string(b) {
			changed[name] = string(b)
		}
		listed = append(listed, want[name])
	}
	// The list first: the go-sdk tells clients the list changed a moment
	// after the server's tools change, and a client that lists then gets
	// this one.
	s.listed.Store(&listed)
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		for _, name := range gone {
			delete(s.tools, name)
		}
	}
	rejected := false
	for _, name := range order {
		b, ok := changed[name]
		if !ok {
			continue
		}
		if err := addTool(s.srv, want[name], s.call); err != nil {
			g.log.Warn("mcp: gateway: skipping a tool", "tool", name, "err", err)
			rejected = true
			continue
		}
		s.tools[name] = b
	}
	if rejected { // a new list: the stored one may be being read
		added := make([]*sdk.Tool, 0, len(listed))
		for _, t := range listed {
			if _, ok := s.tools[t.Name]; ok {
				added = append(added, t)
			}
		}
		s.listed.Store(&added)
	}
}

// addTool is sdk.Server.AddTool, which panics on a schema it cannot use.
func addTool(srv *sdk.Server, t *sdk.Tool, h sdk.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	srv.AddTool(t, h)
	return nil
}

// mcpTool is a fleet tool as MCP lists it: the same name, description and
// input schema, and annotations from its flags.
func (g *Gateway) mcpTool(fs toolkit.FunctionSchema) (*sdk.Tool, error) {
	params := fs.Function.Parameters
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	if params["type"] != "object" {
		return nil, fmt.Errorf("input schema type is %v, MCP needs \"object\"", params["type"])
	}
	b, err := toolkit.MarshalSchema(params, fs.Function.Order) // in declaration order
	if err != nil {
		return nil, err
	}
	t := &sdk.Tool{Name: fs.Function.Name, Description: fs.Function.Description, InputSchema: json.RawMessage(b)}
	if ft, ok := g.fleet.ToolInfo(fs.Function.Name); ok {
		t.Annotations = annotations(ft.ReadOnly, ft.IdempotencyLevel())
	}
	return t, nil
}

// annotations maps a tool's flags to MCP hints: read-only → readOnlyHint;
// read-only, idempotent or side-effect free → idempotentHint. destructiveHint is not
// set (its MCP default, true, is the safe reading of "unknown") except
// for read-only tools, which destroy nothing.
func annotations(readOnly bool, level toolkit.Idempotency) *sdk.ToolAnnotations {
	a := &sdk.ToolAnnotations{ReadOnlyHint: readOnly, IdempotentHint: readOnly || level.Retryable()}
	if readOnly {
		no := false
		a.DestructiveHint = &no
	}
	return a
}

// call runs one tools/call over the bus in the session. A call it
// answers itself (arguments that are no object, a session or gateway at
// its bound) is recorded and timed as one it sends: its span and the time
// from the request to its answer.
func (s *gatewaySession) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	start := time.Now()
	g := s.g
	name := req.Params.Name
	if a := s.aliases.Load(); a != nil && (*a)[name] != "" {
		name = (*a)[name] // an exposed server's tool under its own name
	}
	ctx = s.g.continueTrace(ctx, req)
	var span trace.Span // nil without GatewayOptions.Tracer
	if tr := g.opts.Tracer; tr != nil {
		// The name is the client's: in the span's name only when the
		// fleet serves it (a trace backend lists every span name as an
		// operation), and cut as the log line cuts it.
		spanName := "tools/call"
		attrs := []attribute.KeyValue{
			attribute.String("mcp.method.name", "tools/call"), attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", cutText(name, toolkit.MaxNameLen)),
			attribute.String("mcp.session.id", s.id)}
		t, ok := g.fleet.ToolInfo(name)
		if ok || name == toolkit.MetaToolName {
			spanName += " " + name
		}
		if ok {
			// As the worker's execute_tool span has them (bus/trace.go).
			typ := callspan.TypeFunction
			if t.Kind == toolkit.KindMCP {
				typ = callspan.TypeExtension
			}
			attrs = append(attrs, attribute.String("gen_ai.tool.type", typ),
				attribute.String("gen_ai.tool.description", cutText(t.Description, callspan.MaxDescription)))
		}
		ctx, span = tr.Start(ctx, spanName, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
	}
	input, err := callArguments(req.Params.Arguments)
	if err != nil {
		final := &toolkit.Response{State: toolkit.StateError, Code: toolkit.CodeInvalidInput,
			Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "InvalidInput: " + err.Error()}}}
		return s.refused(name, final, start, span), nil
	}
	leave, over := s.enter()
	defer leave()
	if over != "" {
		final := toolkit.Final("", toolkit.CodeOverloaded, fmt.Sprintf(
			"TooManyCallsError: %s; '%s' was not called. Wait for one to end, then call it again.", over, name))
		return s.refused(name, final, start, span), nil
	}
	ctx, end := s.bound(ctx, req.Extra)
	defer end()
	if g.opts.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.opts.CallTimeout)
		defer cancel()
	}
	if req.Session != nil {
		ctx = bus.WithAsker(ctx, relayAsk(req.Session))
	}
	if g.opts.StreamPoll > 0 && g.opts.StreamBuffer >= 0 && req.Extra != nil && req.Extra.CloseSSEStream != nil && resumable(req.Extra.Header) {
		defer g.pollStream(req.Extra.CloseSSEStream)()
	}
	final := s.send(ctx, req, asWritten(toolkit.ToolCall{Name: name, Input: input, Session: s.id}, req.Params.Arguments))
	if final.Code == toolkit.CodeApprovalRequired {
		final = s.approveByElicitation(ctx, req, name, input, final)
	}
	final = stoppedFinal(ctx, final)
	s.logCall(name, final, time.Since(start))
	if span != nil {
		endSpan(span, final)
	}
	if name == toolkit.MetaToolName && final.State == toolkit.StateSuccess {
		s.refresh(ctx, false, 0) // the client now carries the new revision
	}
	return s.result(final), nil
}

// refused is the result of a call the gateway answers without sending
// it, logged, timed and recorded on its span (nil without a tracer) as a
// call it sends is.
func (s *gatewaySession) refused(name string, final *toolkit.Response, start time.Time, span trace.Span) *sdk.CallToolResult {
	s.logCall(name, final, time.Since(start))
	if span != nil {
		endSpan(span, final)
	}
	return s.result(final)
}

// resumable reports whether the protocol version of an HTTP request has
// resumable streams with priming events (from 2025-11-25, before
// 2026-07-28): closing an older client's stream would lose the result.
func resumable(h http.Header) bool {
	v := h.Get("Mcp-Protocol-Version")
	return v >= "2025-11-25" && v < "2026-07-28"
}

// pollStream closes a call's response stream once, StreamPoll from now,
// unless the returned stop is called first (GatewayOptions.StreamPoll).
// Once: a client resuming the stream gets no new priming event on it, so
// the go-sdk's client, for one, takes a second close for the end of the
// call.
func (g *Gateway) pollStream(closeStream func(sdk.CloseSSEStreamArgs)) (stop func()) {
	t := time.AfterFunc(g.opts.StreamPoll, func() {
		closeStream(sdk.CloseSSEStreamArgs{RetryAfter: GatewayStreamRetry})
	})
	return func() { t.Stop() }
}

// exposedNames maps the own names of the exposed servers' tools
// (GatewayOptions.ExposeServers) to their fleet names, leaving out any
// that would collide with another listed name.
func (g *Gateway) exposedNames(schemas []toolkit.FunctionSchema) map[string]string {
	out := map[string]string{}
	if len(g.opts.ExposeServers) == 0 {
		return out
	}
	listed := map[string]bool{}
	count := map[string]int{}
	for _, fs := range schemas {
		listed[fs.Function.Name] = true
	}
	for _, fs := range schemas {
		for _, srv := range g.opts.ExposeServers {
			if own, ok := strings.CutPrefix(fs.Function.Name, ToolName(srv, "")); ok && own != "" {
				out[own] = fs.Function.Name
				count[own]++
			}
		}
	}
	for own := range out {
		if listed[own] || count[own] > 1 {
			delete(out, own)
		}
	}
	return out
}

// send runs a call over the bus, relaying its progress and log messages
// to the MCP client, and returns its final.
func (s *gatewaySession) send(ctx context.Context, req *sdk.CallToolRequest, call toolkit.ToolCall) *toolkit.Response {
	g := s.g
	token := req.Params.GetProgressToken()
	var final *toolkit.Response
	for ev := range s.c.Call(ctx, call) {
		switch {
		case ev.Progress != nil && token != nil && req.Session != nil:
			p := ev.Progress
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
				ProgressToken: token, Progress: p.Progress, Total: p.Total, Message: p.Message,
			}); err != nil {
				g.log.Debug("mcp: gateway: progress not delivered", "tool", call.Name, "err", err)
			}
		case ev.Log != nil && req.Session != nil:
			// notifications/message, at or above the level the client
			// set (logging/setLevel; none before it sets one).
			l := ev.Log
			if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: sdk.LoggingLevel(l.Level), Logger: l.Logger, Data: l.Data}); err != nil {
				g.log.Debug("mcp: gateway: log message not delivered", "tool", call.Name, "err", err)
			}
		case ev.Final != nil:
			final = ev.Final
		}
	}
	if final == nil { // the bus client always ends with a final; never answer nothing
		final = &toolkit.Response{State: toolkit.StateError, Code: toolkit.CodeInternal,
			Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "InternalError: the call ended without a final response"}}}
	}
	return final
}

// approveByElicitation handles a call that ended approval_required when
// the gateway can approve (GatewayOptions.Approve) and the MCP client
// takes elicitations: it asks the person (the tool, the input's digest,
// why), records an accept as the approval of that call and sends the call
// again, which then runs; a decline ends the call denied, recorded as its
// refusal (GatewayOptions.Deny), and a dismissed prompt (cancel) ends it
// denied too, recording nothing. Otherwise the final stays as it was.
func (s *gatewaySession) approveByElicitation(ctx context.Context, req *sdk.CallToolRequest, name string, input map[string]any, final *toolkit.Response) *toolkit.Response {
	g := s.g
	key, _ := final.Metadata[metaApprovalKey].(string)
	if g.opts.Approve == nil || req.Session == nil || key == "" {
		return final
	}
	if ip := req.Session.InitializeParams(); ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return final
	}
	digest, _ := final.Metadata[metaInputDigest].(string)
	if len(digest) > 16 {
		digest = digest[:16]
	}
	why := strings.TrimPrefix(final.Text(), "PermissionRequiredError: ")
	why, _, _ = strings.Cut(why, " The call was not run.")
	res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{
		Message:         fmt.Sprintf("Allow the tool '%s' to run with this input (digest %s)? %s", name, digest, why),
		RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}},
	})
	if err != nil {
		g.log.Warn("mcp: gateway: asking for an approval", "tool", name, "session", s.id, "err", err)
		return final
	}
	scope, by := toolkit.SessionScope(s.identity, s.id), "mcp-gateway:"+s.identity
	if res.Action != "accept" {
		if res.Action == "decline" && g.opts.Deny != nil {
			if err := g.opts.Deny(ctx, scope, key, by, declinedReason); err != nil {
				g.log.Warn("mcp: gateway: recording a refusal", "tool", name, "session", s.id, "err", err)
			}
		}
		return &toolkit.Response{ID: final.ID, State: toolkit.StateDenied, Code: toolkit.CodeDenied,
			Content: []toolkit.Block{{Type: toolkit.BlockText, Text: fmt.Sprintf("PermissionDeniedError: the user did not approve the call to '%s' (%s).", name, res.Action)}}}
	}
	if err := g.opts.Approve(ctx, scope, key, by); err != nil {
		g.log.Warn("mcp: gateway: recording an approval", "tool", name, "session", s.id, "err", err)
		return final
	}
	return s.send(ctx, req, asWritten(toolkit.ToolCall{ID: key, Name: name, Input: input, Session: s.id}, req.Params.Arguments))
}

// asWritten is call, a call of reset_tools with its arguments' text
// (ToolCall.RawInput) in place of the map decoded from it: the map keeps
// neither the order the model wrote the groups in nor a 1.0 apart from
// a 1, which reset_tools' answer to unknown names or a value that is not
// a bool tells apart as AgentScope's does.
func asWritten(call toolkit.ToolCall, args json.RawMessage) toolkit.ToolCall {
	if call.Name == toolkit.MetaToolName && len(call.Input) > 0 && len(args) > 0 {
		call.RawInput, call.Input = string(args), nil
	}
	return call
}

// declinedReason is the reason of the refusal a decline records.
const declinedReason = "declined in the MCP client's approval prompt"

// The metadata of an approval_required final (package permission's
// MetaApprovalKey, MetaInputDigest).
const (
	metaApprovalKey = "approval_key"
	metaInputDigest = "input_digest"
)

// relayAsk answers a tool's requests (toolkit.Ask) by putting them to the
// MCP client of the session: elicitation/create and
// sampling/createMessage; a client without the capability, or another
// method, is an error the tool gets.
func relayAsk(ss *sdk.ServerSession) bus.Asker {
	return func(ctx context.Context, method string, params any) (any, error) {
		switch method {
		case toolkit.MethodElicit:
			var p sdk.ElicitParams
			if err := remarshal(params, &p); err != nil {
				return nil, err
			}
			res, err := ss.Elicit(ctx, &p)
			if err != nil {
				return nil, err
			}
			var out map[string]any
			return out, remarshal(res, &out)
		case toolkit.MethodSample:
			var p sdk.CreateMessageParams
			if err := remarshal(params, &p); err != nil {
				return nil, err
			}
			res, err := ss.CreateMessage(ctx, &p)
			if err != nil {
				return nil, err
			}
			var out map[string]any
			return out, remarshal(res, &out)
		}
		return nil, fmt.Errorf("the MCP gateway does not relay %s requests", method)
	}
}

// remarshal converts between JSON shapes (a decoded map and an sdk type).
func remarshal(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// logCall logs one answered tools/call (as the worker's call line does:
// info when it succeeded, warn otherwise, with the error text cut short)
// and tells GatewayOptions.OnCall.
func (s *gatewaySession) logCall(tool string, final *toolkit.Response, took time.Duration) {
	g := s.g
	if g.opts.OnCall != nil {
		g.opts.OnCall(tool, final.State, final.Code, took)
	}
	level := slog.LevelInfo
	attrs := []slog.Attr{slog.String("tool", cutText(tool, toolkit.MaxNameLen)), slog.String("session", s.id), slog.String("call", final.ID),
		slog.String("state", string(final.State)), slog.String("code", string(final.Code)), slog.Duration("duration", took)}
	if w, _ := final.Metadata[wire.MetaWorker].(string); w != "" {
		attrs = append(attrs, slog.String("worker", w))
	}
	if s.identity != "" {
		attrs = append(attrs, slog.String("identity", s.identity))
	}
	if final.State != toolkit.StateSuccess {
		level = slog.LevelWarn
		if text := final.Text(); text != "" {
			attrs = append(attrs, slog.String("error", cutText(text, 200)))
		}
	}
	g.log.LogAttrs(context.Background(), level, "mcp: gateway: tool call", attrs...)
}

// cutText cuts s to at most n bytes at a rune boundary, marking the cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// callArguments decodes tools/call arguments: a JSON object, or nothing.
func callArguments(raw any) (map[string]any, error) {
	var b []byte
	switch v := raw.(type) {
	case nil:
		return map[string]any{}, nil
	case json.RawMessage:
		b = v
	case map[string]any:
		return v, nil
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("arguments: %v", err)
		}
	}
	if len(b) == 0 || string(b) == "null" {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("arguments must be a JSON object: %v", err)
	}
	if m == nil {
		m = map[string]any{}
	}
	return toolkit.ExactIntegers(b, m), nil
}

// request notes an HTTP request of the session, which may carry a call
// (call), until the returned func is called; when the session has had
// none in flight for timeout, it ends (idleClose; timeout ≤ 0: never).
func (s *gatewaySession) request(timeout time.Duration, call bool) (done func()) {
	s.idleMu.Lock()
	s.active++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if call {
		s.calls++
	}
	s.used = s.g.uses.Add(1)
	s.idleMu.Unlock()
	return func() {
		s.idleMu.Lock()
		defer s.idleMu.Unlock()
		if call {
			if s.calls--; s.calls == 0 && s.quiet != nil {
				close(s.quiet)
				s.quiet = nil
			}
		}
		s.used = s.g.uses.Add(1)
		if s.active--; s.active == 0 {
			s.armIdleLocked(timeout)
		}
	}
}

// armIdleLocked starts the idle timer of a session without a request in
// flight (timeout ≤ 0: none). s.idleMu is held.
func (s *gatewaySession) armIdleLocked(timeout time.Duration) {
	// An ended session's calls are cancelled already: a timer would only
	// keep it for the timeout.
	if timeout > 0 && s.idle == nil && s.ctx.Err() == nil {
		s.idleAt = time.Now().Add(timeout)
		s.idle = time.AfterFunc(timeout, s.idleClose)
	}
}

// idleClose ends a session no request of which was in flight for the
// session timeout (a client gone, perhaps mid-call): its calls are
// cancelled, then its go-sdk session is closed, which waits for them.
func (s *gatewaySession) idleClose() {
	s.idleMu.Lock()
	// A request came as the timer fired: it is in flight, or it ended
	// and armed the timer anew (Stop came too late for this callback).
	busy := s.active > 0 || time.Now().Before(s.idleAt)
	s.idleMu.Unlock()
	if busy {
		return
	}
	s.end(errSessionIdle)
	g := s.g
	g.mu.Lock()
	defer g.mu.Unlock()
	// Under the lock, as makeRoom does: a closed gateway has closed its
	// sessions, and Close's wait must see every goroutine started.
	if ss := g.sessions[s]; ss != nil && !g.closed {
		g.goroutine(func() { s.close(ss) })
	}
}

// defaultResultWait bounds how long the results of calls the gateway
// ended may take to be written (Gateway.resultWait): an ended session's
// close, Close and ServeListener's shutdown wait for them so long.
const defaultResultWait = 5 * time.Second

// close closes ss, the go-sdk session of s, which the gateway ended
// (s.end): once the requests of s that may carry a call have returned,
// for at most g.resultWait. Once closing, the go-sdk writes no
// response: the results of the calls the end cancelled would not reach
// their clients, whose POSTs would end without them. Not cut short by
// the gateway's Close, which waits so for its own sessions, and for this
// goroutine: the wait stays bounded.
func (s *gatewaySession) close(ss *sdk.ServerSession) {
	t := time.NewTimer(s.g.resultWait)
	defer t.Stop()
	select {
	case <-s.quietCalls():
	case <-t.C:
	}
	ss.Close()
}

// quietCalls is closed once no request of the session that may carry a
// call is in flight.
func (s *gatewaySession) quietCalls() <-chan struct{} {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if s.calls == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if s.quiet == nil {
		s.quiet = make(chan struct{})
	}
	return s.quiet
}

// stopIdle stops the idle timer of a session that ended.
func (s *gatewaySession) stopIdle() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
}

// touch marks the session used now.
func (s *gatewaySession) touch() {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	s.used = s.g.uses.Add(1)
}

// usage reports whether a request that may carry a call is in flight,
// and when the session was used last (g.uses).
func (s *gatewaySession) usage() (busy bool, used uint64) {
	s.idleMu.Lock()
	defer s.idleMu.Unlock()
	return s.calls > 0, s.used
}
