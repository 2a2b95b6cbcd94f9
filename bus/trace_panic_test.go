package bus_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTracePanickedCall: the span of a call whose tool panicked has the
// error status and an exception event with exception.type,
// exception.message and exception.stacktrace (OpenTelemetry semantic
// conventions for exceptions), the stack naming the tool's frame.
func TestTracePanickedCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("panicky", "Panics.", panickyTool))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Tracer: tp.Tracer("worker")})
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "p1", Name: "panicky"}); r.Code != toolkit.CodeInternal {
		t.Fatalf("panicky: %+v", r)
	}
	var sp sdktrace.ReadOnlySpan
	for _, e := range rec.Ended() {
		if e.Name() == "execute_tool panicky" {
			sp = e
		}
	}
	if sp == nil {
		t.Fatal("no execute_tool span")
	}
	if sp.Status().Code != codes.Error {
		t.Errorf("status %v, want error", sp.Status())
	}
	var found bool
	for _, ev := range sp.Events() {
		if ev.Name != "exception" {
			continue
		}
		found = true
		attrs := map[string]string{}
		for _, a := range ev.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
		}
		if attrs["exception.type"] != "string" {
			t.Errorf("exception.type = %q, want the panic value's type", attrs["exception.type"])
		}
		if attrs["exception.message"] != "the tool broke" {
			t.Errorf("exception.message = %q", attrs["exception.message"])
		}
		if !strings.Contains(attrs["exception.stacktrace"], "panickyTool") {
			t.Errorf("exception.stacktrace does not name the tool's frame:\n%s", attrs["exception.stacktrace"])
		}
	}
	if !found {
		t.Errorf("no exception event among %v", sp.Events())
	}
}

func panickyTool(ctx context.Context, in struct{}) (string, error) {
	panic("the tool broke")
}
