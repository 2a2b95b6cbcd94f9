package toolkit

import (
	"context"
	"errors"
	"fmt"
)

// The rules that turn what a handler did into the call's final response
// live here, once: the dispatcher applies them, middleware that needs to
// know how a call will end asks Outcome, and transports build the finals
// they make themselves (a call that never reached a toolkit, a lost
// worker, a deadline the caller saw first) with Final and ContextError.

// InterruptedText is the chunk text that ends an interrupted call:
// AgentScope's, word for word, for an interrupt by the user (the
// caller's cancel).
const InterruptedText = "<system-reminder>The tool call has been interrupted by the user.</system-reminder>"

// DrainedText is the chunk text that ends a call interrupted because the
// worker serving it shut down (cause ErrDraining: its grace period ended),
// where InterruptedText would tell the model that the user stopped it.
const DrainedText = "<system-reminder>The tool call has been interrupted because the worker serving it shut down.</system-reminder>"

// TimeoutText is the chunk text that ends a call whose deadline passed.
const TimeoutText = "TimeoutError: The tool call exceeded its deadline and was stopped."

// MetaRetryAfterMS is the final's metadata key for Error.RetryAfter, in
// milliseconds.
const MetaRetryAfterMS = "retry_after_ms"

// Failure is the error a call ends with when its handler chain returned
// err: when the call's context has ended and the error comes from that
// (the context's error or cause, ErrStopped, or a plain tool error), it is
// ContextError(ctx); otherwise an *Error in err's chain, or CodeOf(err)
// with err's whole text, keeping the RetryAfter and Metadata of an *Error
// in its chain. An interrupted call's message is InterruptedText, or
// DrainedText when ctx ended by its worker's stop (ErrDraining).
func Failure(ctx context.Context, err error) *Error {
	if ctx.Err() != nil && (errors.Is(err, ctx.Err()) || errors.Is(err, context.Cause(ctx)) ||
		errors.Is(err, ErrStopped) || CodeOf(err) == CodeToolError) {
		return ContextError(ctx)
	}
	f := &Error{Code: CodeOf(err), Message: err.Error(), cause: err}
	if f.Code == CodeInterrupted {
		f.Message = interruptedText(ctx)
	}
	var te *Error
	if errors.As(err, &te) {
		f.RetryAfter, f.Metadata = te.RetryAfter, te.Metadata
	}
	return f
}

// ContextError is the error a caller sees for a call whose context ended:
// CodeTimeout with TimeoutText when its deadline passed (its error or its
// cause is context.DeadlineExceeded: a deadline given a cause of its own,
// context.WithDeadlineCause, is still a deadline), otherwise
// CodeInterrupted, with DrainedText when its cause is ErrDraining and
// InterruptedText for any other. Transports use it for the finals they
// make themselves, so every path says the same.
func ContextError(ctx context.Context) *Error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return NewError(CodeTimeout, TimeoutText)
	}
	return NewError(CodeInterrupted, interruptedText(ctx))
}

// interruptedText is the notice that ends a call interrupted with ctx:
// DrainedText when its worker's stop ended it, InterruptedText otherwise.
func interruptedText(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), ErrDraining) {
		return DrainedText
	}
	return InterruptedText
}

// StateCode is the code of a call that returned no error but whose chunks
// accumulated to state s: tool_error for error, denied for denied,
// interrupted for interrupted, none otherwise.
func StateCode(s State) Code {
	switch s {
	case StateError:
		return CodeToolError
	case StateDenied:
		return CodeDenied
	case StateInterrupted:
		return CodeInterrupted
	}
	return ""
}

// MergeState folds a chunk's state into an accumulated one as AgentScope
// 2.x does: error is sticky, otherwise the later of interrupted and denied
// wins, and running or success leave it alone.
func MergeState(acc, s State) State {
	switch s {
	case StateError:
		return StateError
	case StateInterrupted, StateDenied:
		if acc != StateError {
			return s
		}
	}
	return acc
}

// Outcome is the state and code the dispatcher gives a call whose handler
// chain returned err after writing chunks that accumulated to chunkState
// (MergeState; "" when none said anything).
func Outcome(ctx context.Context, err error, chunkState State) (State, Code) {
	state := chunkState
	var code Code
	if err != nil {
		code = Failure(ctx, err).Code
		state = MergeState(state, code.State())
	}
	if state == "" || state == StateRunning {
		state = StateSuccess
	}
	if code == "" {
		code = StateCode(state)
	}
	return state, code
}

// Final is a final response made without running a tool: state from code,
// and msg as its one text block.
func Final(id string, code Code, msg string) *Response {
	return &Response{ID: id, State: code.State(), Code: code, Content: []Block{{Type: BlockText, Text: msg}}}
}

// NotFound is the error of a call to a tool nobody has, in AgentScope's
// words.
func NotFound(name string) *Error {
	return NewError(CodeNotFound, fmt.Sprintf("ToolNotFoundError: The tool named '%s' doesn't exist.", unheldName(name)))
}

// unheldName is a name no tool or group has, for an error: whole, or,
// past MaxNameLen, its first 64 bytes and its length, as no name that
// long exists to be meant.
func unheldName(name string) string {
	if len(name) > MaxNameLen {
		return fmt.Sprintf("%.64s… (%d bytes)", name, len(name))
	}
	return name
}
