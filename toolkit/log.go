package toolkit

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// LogMessage is a log message a tool sends to whoever called it, as MCP's
// notifications/message carries one: a level (LogLevels), an optional
// logger name and any JSON data.
type LogMessage struct {
	Level  string `json:"level" msgpack:"level"`
	Logger string `json:"logger,omitempty" msgpack:"logger,omitempty"`
	Data   any    `json:"data" msgpack:"data"`
}

// LogLevels are the levels of a LogMessage, least severe first (MCP's,
// from syslog).
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// LogWriter is a Writer that passes log messages on to the caller: the
// bus carries them as log frames, the MCP gateway as notifications/message,
// toolkit.Call yields them as Event.Log.
type LogWriter interface {
	Log(m LogMessage) error
}

// Log sends m to the call's caller through w when w can carry it (a
// LogWriter); otherwise it is dropped and Log returns nil. A level that
// is not one of LogLevels is an error.
func Log(w Writer, m LogMessage) error {
	if !slices.Contains(LogLevels, m.Level) {
		return fmt.Errorf("toolkit: log level %q: want one of %v", m.Level, LogLevels)
	}
	if lw, ok := w.(LogWriter); ok {
		return lw.Log(m)
	}
	return nil
}

// MCP's server→client requests a tool can put to its caller with Ask.
const (
	// MethodElicit asks the person behind the caller for input
	// (elicitation/create: params {message, requestedSchema}; result
	// {action: accept|decline|cancel, content}).
	MethodElicit = "elicitation/create"
	// MethodSample asks the caller's model for a completion
	// (sampling/createMessage).
	MethodSample = "sampling/createMessage"
)

// ErrCannotAsk is what Ask returns when the call's caller cannot answer
// requests (no transport for them, or no handler on the caller's side).
var ErrCannotAsk = errors.New("toolkit: the caller cannot answer requests")

// Asker is a Writer that can put a request to the call's caller and wait
// for the answer: the bus carries it as an ask frame and the caller's
// answer back, the MCP gateway relays it to its client.
type Asker interface {
	Ask(ctx context.Context, method string, params any) (any, error)
}

// Ask puts an MCP server→client request (MethodElicit, MethodSample) to
// the call's caller through w and returns its result (MCP's JSON shape, as
// maps and slices), or the caller's error. A transport's writer carries it
// to the caller (the bus, the MCP gateway); in process, the AskFunc the
// caller's context holds (WithAsker) answers; without either Ask returns
// ErrCannotAsk.
func Ask(ctx context.Context, w Writer, method string, params any) (any, error) {
	if a, ok := w.(Asker); ok {
		return a.Ask(ctx, method, params)
	}
	if a := AskerFrom(ctx); a != nil {
		return a(ctx, method, params)
	}
	return nil, ErrCannotAsk
}

// AskFunc answers a tool's request (Ask) on the caller's side: method and
// params as MCP has them; the result goes back to the tool. It returns
// when ctx ends (the call's): nothing waits for one that does not.
type AskFunc func(ctx context.Context, method string, params any) (any, error)

type askerKey struct{}

// WithAsker returns ctx with a, which answers the requests (Ask) of the
// tools of the calls made with it: in process (Toolkit.Call, Invoke) and
// through the bus (bus.Client, whose ClientOptions.Asker it overrides), so
// one context serves a caller either way.
func WithAsker(ctx context.Context, a AskFunc) context.Context {
	return context.WithValue(ctx, askerKey{}, a)
}

// AskerFrom returns the AskFunc WithAsker put in ctx, or nil.
func AskerFrom(ctx context.Context) AskFunc {
	a, _ := ctx.Value(askerKey{}).(AskFunc)
	return a
}
