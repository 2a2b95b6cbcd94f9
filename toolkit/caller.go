package toolkit

import (
	"context"
	"iter"
)

// Caller is the surface agent code runs tools through: *Toolkit in
// process, and the bus package's Client across a fleet, so code written
// against it runs the same both ways.
type Caller interface {
	// Call yields a call's chunks and progress, then exactly one final.
	Call(ctx context.Context, call ToolCall) iter.Seq[Event]
	// Invoke returns only the final response.
	Invoke(ctx context.Context, call ToolCall) *Response
	// SessionSchemas lists the tools the session may see now, honouring
	// at least the given groups revision.
	SessionSchemas(ctx context.Context, session string, minRevision uint64) ([]FunctionSchema, error)
}

var _ Caller = (*Toolkit)(nil)
