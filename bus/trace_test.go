package bus_test

import (
	"context"
	"errors"
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
