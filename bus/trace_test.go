package bus_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTraces: a call made in a span is recorded by the worker as a child
// span "execute_tool <tool>" with the GenAI attributes, the tool's context
// carries it, and a failed call's span says so; without a span in the
// caller's context the request carries no trace headers.
func TestTraces(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tk := toolkit.New(nil)
	var inTool trace.SpanContext
	mustAdd(t, tk, toolkit.Func("traced", "Reads its span.", func(ctx context.Context, in struct{}) (string, error) {
		inTool = trace.SpanContextFromContext(ctx)
		return "ok", nil
	}))
	mustAdd(t, tk, toolkit.Func("broken", "Fails.", func(ctx context.Context, in struct{}) (string, error) {
		return "", errors.New("no")
	}))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Tracer: tp.Tracer("worker")})
	c := newClient(t, natstest.Connect(t, s), nil)

	ctx, parent := tp.Tracer("agent").Start(ctxT(t), "agent turn")
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "call-1", Name: "traced", Session: "s1"}); r.State != toolkit.StateSuccess {
		t.Fatalf("traced: %+v", r)
	}
	c.Invoke(ctx, toolkit.ToolCall{ID: "call-2", Name: "broken"})
	parent.End()

	spans := map[string]sdktrace.ReadOnlySpan{}
	for _, sp := range rec.Ended() {
		spans[sp.Name()] = sp
	}
	sp := spans["execute_tool traced"]
	if sp == nil {
		t.Fatalf("no execute_tool span among %v", spans)
	}
	if sp.Parent().SpanID() != parent.SpanContext().SpanID() || sp.SpanContext().TraceID() != parent.SpanContext().TraceID() {
		t.Errorf("the call's span is not a child of the caller's: parent %v, want %v", sp.Parent(), parent.SpanContext())
	}
	if inTool.SpanID() != sp.SpanContext().SpanID() {
		t.Errorf("the tool's context carries span %v, want the call's %v", inTool.SpanID(), sp.SpanContext().SpanID())
	}
	attrs := map[attribute.Key]string{}
	for _, a := range sp.Attributes() {
		attrs[a.Key] = a.Value.Emit()
	}
	if attrs["gen_ai.operation.name"] != "execute_tool" || attrs["gen_ai.tool.name"] != "traced" || attrs["gen_ai.tool.call.id"] != "call-1" || attrs["toolbus.session"] != "s1" {
		t.Errorf("attributes: %v", attrs)
	}
	if sp.Status().Code == codes.Error {
		t.Errorf("a successful call's span has status %v", sp.Status())
	}
	failed := spans["execute_tool broken"]
	if failed == nil || failed.Status().Code != codes.Error {
		t.Fatalf("the failed call's span: %v", failed)
	}
	for _, a := range failed.Attributes() {
		if a.Key == "error.type" && a.Value.Emit() != string(toolkit.CodeToolError) {
			t.Errorf("error.type = %s", a.Value.Emit())
		}
	}

	// No span in the caller's context: a trace of the worker's own.
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "call-3", Name: "traced"}); r.State != toolkit.StateSuccess {
		t.Fatalf("untraced: %+v", r)
	}
	var own int
	for _, sp := range rec.Ended() {
		if sp.Name() == "execute_tool traced" && sp.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			own++
			if sp.Parent().IsValid() {
				t.Errorf("a call without a caller span has a parent: %v", sp.Parent())
			}
		}
	}
	if own != 1 {
		t.Errorf("%d spans of the untraced call, want 1", own)
	}
}

// discardExporter drops the spans it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkTraces measures an echo call, 64 callers, with tracing off (no
// tracer on the worker, no span in the caller's context: what a process
// without OTEL_* variables runs) and on (an SDK provider batching into an
// exporter that drops them, the caller in a span). Compare "off" with
// BenchmarkEcho/inprocess/bus/callers=64, and "on" with "off".
//
//	go test -run '^$' -bench 'BenchmarkTraces|BenchmarkEcho/inprocess/bus/callers=64' -benchtime 3s ./bus/
func BenchmarkTraces(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
	defer tp.Shutdown(context.Background())
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			s := natstest.Embedded(b, false)
			tk := toolkit.New(nil)
			mustAdd(b, tk, echoTool())
			opts := &bus.WorkerOptions{}
			ctx := context.Background()
			if on {
				opts.Tracer = tp.Tracer("worker")
				var span trace.Span
				ctx, span = tp.Tracer("agent").Start(ctx, "agent turn")
				defer span.End()
			}
			serve(b, natstest.Connect(b, s), tk, opts)
			c := newClient(b, natstest.Connect(b, s), nil)
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if r := c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "x"}}); r.State != toolkit.StateSuccess {
						b.Error(r)
						return
					}
				}
			})
		})
	}
}
