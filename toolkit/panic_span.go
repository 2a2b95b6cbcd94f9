package toolkit

import (
	"context"

	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/internal/callspan"
)

// recordPanic records a panic the toolkit recovered on the span ctx
// carries (the call's, "execute_tool <tool>", on a worker that traces
// calls) as an "exception" event with the error status
// (callspan.Exception). Nothing without a recording span.
func recordPanic(ctx context.Context, v any, text string, stack []byte) {
	callspan.Exception(trace.SpanFromContext(ctx), v, text, stack)
}
