package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// ErrTimeout is the cause of a context cancelled by the Timeout
// middleware; tools can tell it from the caller's own cancellation with
// context.Cause.
var ErrTimeout = errors.New("middleware: tool deadline from the timeout middleware")

// Timeout gives calls a deadline. The zero value adds none. A negative
// duration is a mistake, not "none": Middleware panics on one (as
// toolkit.Toolkit.Use does on a nil middleware), so a deadline computed
// wrong does not silently go; a configuration read at run time is checked
// before (the worker's config refuses negative timeouts).
//
// The deadline is the shorter of the caller's and the tool's: Timeout
// never extends a call. When its deadline passes the call's context is
// cancelled (with cause ErrTimeout) and the call ends with code timeout and
// its partial output; a tool that finishes successfully anyway keeps its
// success. Tools must honour their context: one that ignores it runs until
// it returns.
type Timeout struct {
	// Default is the deadline of tools not listed in PerTool; zero means
	// none.
	Default time.Duration
	// PerTool overrides Default by tool name; a zero duration exempts the
	// tool.
	PerTool map[string]time.Duration
}

// Middleware returns the middleware. It reads the configuration now, so
// later changes to t (or its map) have no effect. It panics if Default
// or a PerTool duration is negative.
func (t Timeout) Middleware() toolkit.Middleware {
	if t.Default < 0 {
		panic(fmt.Sprintf("middleware: Timeout.Default is negative (%v): want a deadline, or zero for none", t.Default))
	}
	per := make(map[string]time.Duration, len(t.PerTool))
	for k, v := range t.PerTool {
		if v < 0 {
			panic(fmt.Sprintf("middleware: Timeout.PerTool[%q] is negative (%v): want a deadline, or zero to exempt the tool", k, v))
		}
		per[k] = v
	}
	def := t.Default
	return func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			d, ok := per[call.Name]
			if !ok {
				d = def
			}
			if d <= 0 {
				return next(ctx, call, w)
			}
			tctx, cancel := context.WithTimeoutCause(ctx, d, ErrTimeout)
			defer cancel()
			err := next(tctx, call, w)
			if err != nil && ctx.Err() == nil && errors.Is(context.Cause(tctx), ErrTimeout) {
				return &toolkit.Error{
					Code:    toolkit.CodeTimeout,
					Message: fmt.Sprintf("TimeoutError: The tool call exceeded its %v deadline and was stopped.", d),
				}
			}
			return err
		}
	}
}
