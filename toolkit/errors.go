package toolkit

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Code classifies why a call did not succeed. The set is closed: these are
// the only codes that travel on a final response, on the wire and in
// process, so clients can branch without parsing text.
type Code string

const (
	// CodeNotFound: no tool has the requested name.
	CodeNotFound Code = "not_found"
	// CodeGroupInactive: the tool exists but its group is not active for the
	// session; the model should call reset_tools first.
	CodeGroupInactive Code = "group_inactive"
	// CodeInvalidInput: the input failed validation against the tool's schema.
	CodeInvalidInput Code = "invalid_input"
	// CodeDenied: a permission rule or policy refused the call.
	CodeDenied Code = "denied"
	// CodeApprovalRequired: a human must approve the call before it runs.
	CodeApprovalRequired Code = "approval_required"
	// CodeTimeout: the call's deadline passed.
	CodeTimeout Code = "timeout"
	// CodeInterrupted: the caller (or a draining worker) cancelled the call.
	CodeInterrupted Code = "interrupted"
	// CodeToolError: the tool itself reported a failure.
	CodeToolError Code = "tool_error"
	// CodeUnavailable: no worker serves the tool right now.
	CodeUnavailable Code = "unavailable"
	// CodeOverloaded: the call was refused for load (rate limit, in-flight
	// limit); it may be retried after Error.RetryAfter.
	CodeOverloaded Code = "overloaded"
	// CodeWorkerLost: the worker running the call went silent. It is the
	// bus's verdict, not a tool's: a tool (or middleware) that answers it
	// on a worker has its answer sent as CodeToolError, message and
	// metadata kept, so that it does not have the call sent again.
	CodeWorkerLost Code = "worker_lost"
	// CodeInternal: a bug: a panic or an impossible state.
	CodeInternal Code = "internal"
)

// Valid reports whether c is one of the closed set of codes.
func (c Code) Valid() bool {
	switch c {
	case CodeNotFound, CodeGroupInactive, CodeInvalidInput, CodeDenied, CodeApprovalRequired,
		CodeTimeout, CodeInterrupted, CodeToolError, CodeUnavailable, CodeOverloaded,
		CodeWorkerLost, CodeInternal:
		return true
	}
	return false
}

// State returns the response state that goes with the code.
func (c Code) State() State {
	switch c {
	case "":
		return StateSuccess
	case CodeInterrupted:
		return StateInterrupted
	case CodeDenied, CodeApprovalRequired:
		return StateDenied
	default:
		return StateError
	}
}

// Error is the one error type of toolbus. A handler or middleware returns
// an *Error to end a call with a specific code and a message for the model;
// the dispatcher turns it into the final response. Other errors returned by
// a tool become CodeToolError with err.Error() as the message.
//
// Go errors returned from registration functions (Add, AddGroup, ...) are
// for the programmer and never reach a model.
type Error struct {
	Code    Code
	Message string
	// RetryAfter, when non-zero, tells the caller when a retry may succeed
	// (CodeOverloaded).
	RetryAfter time.Duration
	// Metadata is merged into the final response's metadata, within
	// Options.MaxResultBytes (entries past it are dropped, and the
	// message names them, the note counted within the bound).
	Metadata map[string]any
	cause    error
}

// NewError returns an *Error with the given code and message.
func NewError(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Errorf formats a message (with %w support) into an *Error.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), cause: errors.Unwrap(err)}
}

func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.cause }

// Is makes errors.Is(err, &Error{Code: c}) match any *Error with code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// CodeOf classifies err: "" for nil, the code of an *Error in its chain,
// CodeTimeout for context.DeadlineExceeded, CodeInterrupted for
// context.Canceled and CodeToolError for anything else. An *Error whose
// code is not one of the closed set (Valid) is a tool's failure,
// CodeToolError: a final carries only codes of the set (the wire refuses
// others, and metrics label calls by code).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		if !e.Code.Valid() {
			return CodeToolError
		}
		return e.Code
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	case errors.Is(err, context.Canceled):
		return CodeInterrupted
	}
	return CodeToolError
}

// Causes a call's context can be cancelled with (context.WithCancelCause),
// so middleware and tools can tell them apart with context.Cause.
var (
	// ErrCallerCancelled: the caller cancelled the call.
	ErrCallerCancelled = errors.New("toolkit: call cancelled by the caller")
	// ErrDraining: the worker is shutting down and its grace period ended.
	ErrDraining = errors.New("toolkit: worker draining")
	// ErrCallerGone: the caller went away without cancelling (a worker
	// found nothing subscribed to the call's reply subject for a while).
	ErrCallerGone = errors.New("toolkit: the caller is gone")
	// ErrInvalidSession is wrapped by a GroupState's error for a session
	// it cannot keep state for (a name too long to be a key): the call
	// ends invalid_input, not unavailable, since no retry helps.
	ErrInvalidSession = errors.New("invalid session")
	// ErrInvalidOption is wrapped by every registration option that rejects
	// its value.
	ErrInvalidOption = errors.New("toolkit: invalid option")
	// ErrStopped is returned by Writer methods once the consumer has gone
	// away; a tool that sees it should return. It is also what a chain's
	// rest left running by a middleware that returned (and a registered
	// tool's Handler, Tool.Handler) returns, without running the tool,
	// once Dispatch has answered the call (see Middleware).
	ErrStopped = errors.New("toolkit: stream consumer stopped")
	// ErrOutputTooLarge is returned by Write once the call's output has
	// reached Options.MaxResultBytes: the call has failed, and a tool that
	// sees it should return.
	ErrOutputTooLarge = errors.New("toolkit: the call's output is over its limit")
	// ErrUnmergeable is wrapped by the *Error (code tool_error) Write
	// returns once the call has failed by a chunk the toolkit could not
	// merge into its output (Accumulator.Add's error): with
	// ErrOutputTooLarge, it tells the toolkit's refusals from a writer's
	// own errors of that code.
	ErrUnmergeable = errors.New("toolkit: a chunk could not be merged into the call's output")
)
