package toolkit

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// recordPanic records a panic the toolkit recovered on the span ctx
// carries (the call's, "execute_tool <tool>", on a worker that traces
// calls), as the OpenTelemetry semantic conventions record an operation
// that ended by an exception: an "exception" event with exception.type
// (the panic value's Go type), exception.message (text, PanicText) and
// exception.stacktrace (stack, the panicking goroutine's), and the
// span's error status. Nothing without a recording span.
func recordPanic(ctx context.Context, v any, text string, stack []byte) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", fmt.Sprintf("%T", v)),
		attribute.String("exception.message", text),
		attribute.String("exception.stacktrace", string(stack)),
	))
	span.SetStatus(codes.Error, text)
}
