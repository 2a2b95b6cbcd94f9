package bus

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/callspan"
	"github.com/toolbus/toolbus/toolkit"
)

// Traces (OpenTelemetry). A caller's trace crosses the bus in the W3C
// headers traceparent and tracestate of the request: the client puts
// them there when the call's context carries a span (nothing otherwise),
// and a worker with WorkerOptions.Tracer records the call as a span of
// that trace, following the GenAI semantic conventions for tool
// execution: "execute_tool <tool>", kind internal, with
// gen_ai.operation.name, gen_ai.tool.name, gen_ai.tool.call.id,
// gen_ai.tool.type and gen_ai.tool.description (for a tool served here:
// "extension" for one proxied from an MCP server, toolkit.KindMCP,
// "function" for any other; the description cut to 1 KiB) and, when
// the call did not succeed, error.type (its code), with the span's error
// status when it failed, not when it was interrupted or denied (the rule
// of internal/callspan, which the gateway's and the MCP client's spans
// follow too; a tool that panicked: also an "exception" event, recorded
// by the toolkit that recovered the panic, or by the worker for a panic
// past the toolkit's recovery; its message cut to 4 KiB,
// callspan.MaxMessage). A call answered without running
// (a cancel or deadline that came first, a tool not served here, a bad
// request) gets the same span, started and ended at its answer. The
// tool's context carries the span, so work it starts (an MCP call, an
// HTTP request with the context) is a child of it. The trace keeps at
// most callspan.MaxTraceState bytes of the caller's tracestate (W3C
// Trace Context's cut), which the tool's requests in the trace carry on.
// What the caller chose (the tool's name, the call id, the session) goes
// on the span as UTF-8, each byte that is not replaced by U+FFFD: OTLP
// exports no batch holding a string that is not.

// maxSpanSession bounds the session name a span carries.
const maxSpanSession = 256

// traceContext is the W3C trace-context propagator.
var traceContext propagation.TraceContext

// natsCarrier carries trace context in NATS headers.
type natsCarrier nats.Header

func (c natsCarrier) Get(key string) string { return nats.Header(c).Get(key) }
func (c natsCarrier) Set(key, value string) { nats.Header(c).Set(key, value) }
func (c natsCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// injectTrace adds ctx's trace context to h (allocating it when nil);
// h unchanged when ctx carries no span.
func injectTrace(ctx context.Context, h nats.Header) nats.Header {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return h
	}
	if h == nil {
		h = nats.Header{}
	}
	traceContext.Inject(ctx, natsCarrier(h))
	return h
}

// startCallSpan starts the span of a call on the worker, in the trace its
// request carries (a new trace without one). tool is the call's tool as
// this worker serves it, nil when it does not: its type and description
// go on the span (gen_ai.tool.type, gen_ai.tool.description).
func startCallSpan(tracer trace.Tracer, h nats.Header, call *toolkit.ToolCall, tool *toolkit.Tool) (context.Context, trace.Span) {
	ctx := context.Background()
	if h != nil {
		// The caller writes the tracestate: the trace goes on with at
		// most callspan.MaxTraceState bytes of it.
		ctx = callspan.BoundTraceState(traceContext.Extract(ctx, natsCarrier(h)))
	}
	// Copies: the call's strings share the request's body, which a span
	// waiting in the exporter's queue must not keep. The caller chose
	// them, so they go on the span as UTF-8 (callspan.Text) and bounded:
	// a call id the worker refused may be as long as a request.
	name := strings.Clone(callspan.Text(call.Name, toolkit.MaxNameLen))
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", name),
		attribute.String("gen_ai.tool.call.id", strings.Clone(callspan.Text(call.ID, wire.MaxCallIDLen))),
	}
	if tool != nil {
		typ := callspan.TypeFunction
		if tool.Kind() == toolkit.KindMCP {
			typ = callspan.TypeExtension
		}
		// The description is the registry's, which the span may keep.
		attrs = append(attrs, attribute.String("gen_ai.tool.type", typ), attribute.String("gen_ai.tool.description", cutUTF8(tool.Description, callspan.MaxDescription)))
	}
	if call.Session != "" {
		attrs = append(attrs, attribute.String("toolbus.session", strings.Clone(callspan.Text(call.Session, maxSpanSession))))
	}
	if call.Attempt > 0 {
		attrs = append(attrs, attribute.Int("toolbus.attempt", call.Attempt))
	}
	return tracer.Start(ctx, "execute_tool "+name, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
}

// callSpan starts the span of a call this worker runs (startCallSpan,
// with the tool as served here). Not inlined: accept's frame, on the
// path of every call, stays as it is without a tracer.
//
//go:noinline
func (w *Worker) callSpan(h nats.Header, call *toolkit.ToolCall) (context.Context, trace.Span) {
	tool, _ := w.tk.Get(call.Name)
	return startCallSpan(w.opts.Tracer, h, call, tool)
}

// routeSpan turns a call's span into the record of passing the call on:
// to the worker its session is pinned to, or (its tool removed here) to
// the tool's queue group or back to the durable queue; to names where.
func routeSpan(span trace.Span, tool, to string) {
	span.SetName("route_tool " + callspan.Text(tool, toolkit.MaxNameLen))
	span.SetAttributes(attribute.String("gen_ai.operation.name", "route_tool"), attribute.String("toolbus.forwarded_to", to))
}

// refusedSpan records the span of a call the worker answers without
// running it (replyFinal: its cancel or deadline came first, its tool is
// not served here, its request is bad), started and ended at the answer:
// named and attributed as a call that ran, and ended as the final says.
func refusedSpan(tracer trace.Tracer, h nats.Header, call *toolkit.ToolCall, tool *toolkit.Tool, resp *toolkit.Response) {
	_, span := startCallSpan(tracer, h, call, tool)
	endCallSpan(span, resp)
}

// endCallSpan ends a call's span with how the call ended
// (callspan.Outcome).
func endCallSpan(span trace.Span, resp *toolkit.Response) {
	callspan.Outcome(span, string(resp.Code), resp.State == toolkit.StateError, "")
	span.End()
}
