package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/internal/callspan"
	"github.com/toolbus/toolbus/toolkit"
)

// Traces. A call's trace context reaches the MCP server two ways: in the
// W3C headers (traceparent, tracestate) of the HTTP requests of
// Streamable HTTP and SSE servers, and in the request's _meta
// (traceparent, tracestate), which stdio servers can read. With
// Options.Tracer the client also records each tools/call as a client span
// ("tools/call <tool>", mcp.method.name, gen_ai.tool.name,
// gen_ai.tool.type "extension", toolbus.mcp.server, and error.type with the error status as
// callspan.Outcome has it: a cancelled call is interrupted, not failed).
// The gateway continues the
// trace of an incoming tools/call from the same headers or _meta, in a
// server span of its own ("tools/call <tool>", mcp.method.name,
// gen_ai.operation.name, gen_ai.tool.name, mcp.session.id, for a tool the
// fleet serves gen_ai.tool.type and gen_ai.tool.description as the
// worker's span has them, and error.type,
// the final's code, when the call did not succeed: endSpan), also for a
// call it answers itself without sending it (bad arguments, past
// MaxCalls or MaxSessionCalls).

var traceContext propagation.TraceContext

// injectMeta puts ctx's trace context into an MCP request's _meta.
func injectMeta(ctx context.Context, meta sdk.Meta) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		traceContext.Inject(ctx, metaCarrier(meta))
	}
}

// metaCarrier carries trace context in an MCP _meta object.
type metaCarrier sdk.Meta

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}
func (m metaCarrier) Set(key, value string) { m[key] = value }
func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// continueTrace is ctx in the trace an incoming request carries: in the
// HTTP request's W3C headers, else in its _meta; with at most
// callspan.MaxTraceState bytes of its tracestate, which the fleet's and
// the mounted servers' requests carry on.
func (g *Gateway) continueTrace(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	if req.Extra != nil && req.Extra.Header != nil && req.Extra.Header.Get("traceparent") != "" {
		if c := traceContext.Extract(ctx, propagation.HeaderCarrier(req.Extra.Header)); trace.SpanContextFromContext(c).IsValid() {
			return callspan.BoundTraceState(c)
		}
	}
	if meta := req.Params.GetMeta(); meta != nil {
		if _, ok := meta["traceparent"].(string); ok {
			return callspan.BoundTraceState(traceContext.Extract(ctx, metaCarrier(meta)))
		}
	}
	return ctx
}

// endSpan records on the gateway's span of a tools/call how the call
// ended, as the worker records it on its execute_tool span
// (callspan.Outcome): the code as error.type unless it succeeded, and the
// error status when it failed (an interrupted or denied call did not).
func endSpan(span trace.Span, final *toolkit.Response) {
	callspan.Outcome(span, string(final.Code), final.State == toolkit.StateError, "")
}
