package bus_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/callspan"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCallerTraceStateBounded: a caller's request may carry a tracestate
// header of 32 members of 513 bytes (16 KB), which the worker continued
// whole: the call's span held it, and so did every request its tool made
// in the trace. A tool proxied from an MCP server sends it on as an HTTP
// header, and an HTTP server that takes 16 KiB of headers (Node's) refused
// that request with 431, which broke the MCP session, and with it the
// calls of every other caller of that server's tools. The worker now
// keeps at most callspan.MaxTraceState bytes of it (W3C Trace Context's
// cut: long members first, then from the end), in the same trace.
func TestCallerTraceStateBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tk := toolkit.New(nil)
	seen := make(chan trace.SpanContext, 1)
	mustAdd(t, tk, toolkit.Func("traced", "Reads its span.", func(ctx context.Context, in struct{}) (string, error) {
		seen <- trace.SpanContextFromContext(ctx)
		return "ok", nil
	}))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Tracer: tp.Tracer("worker")})
	c := newClient(t, natstest.Connect(t, s), nil)

	members := []string{"short=1", "also=2"}
	for i := range 30 {
		members = append(members, fmt.Sprintf("k%03d%s=%s", i, strings.Repeat("a", 252), strings.Repeat("v", 256)))
	}
	ts, err := trace.ParseTraceState(strings.Join(members, ","))
	if err != nil {
		t.Fatal(err)
	}
	caller := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{7}, SpanID: trace.SpanID{7}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: true})
	if r := c.Invoke(trace.ContextWithRemoteSpanContext(ctxT(t), caller), toolkit.ToolCall{Name: "traced"}); r.State != toolkit.StateSuccess {
		t.Fatalf("traced: %s %s %s", r.State, r.Code, r.Text())
	}
	inTool := <-seen
	if got := inTool.TraceState().String(); got != "short=1,also=2" {
		t.Errorf("the tool's trace carries a tracestate of %d bytes (%.60q…), want the caller's %d cut to %q (at most %d)",
			len(got), got, len(ts.String()), "short=1,also=2", callspan.MaxTraceState)
	}
	if inTool.TraceID() != caller.TraceID() {
		t.Errorf("the tool's trace %v, want the caller's %v", inTool.TraceID(), caller.TraceID())
	}
	natstest.WaitFor(t, "the call's span", func() bool { return len(rec.Ended()) > 0 })
	if sp := rec.Ended()[0]; sp.Parent().SpanID() != caller.SpanID() || len(sp.SpanContext().TraceState().String()) > callspan.MaxTraceState {
		t.Errorf("the call's span: parent %v, tracestate of %d bytes; want the caller's span as parent and at most %d bytes",
			sp.Parent().SpanID(), len(sp.SpanContext().TraceState().String()), callspan.MaxTraceState)
	}
}
