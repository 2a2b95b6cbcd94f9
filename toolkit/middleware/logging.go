package middleware

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/toolbus/toolbus/toolkit"
)

// Logging logs one line per call when the call ends (CallLog with its
// defaults): the tool, call ID, session (each cut at 256 bytes), final
// state, code, duration, the error text of a call whose handler failed
// (cut at 200 bytes), the caller identity and the durable attempt, when
// the call has them.
// Successful calls log at Info, failed ones at Warn, internal errors (and
// panics, which it logs and passes on for the toolkit to recover) at
// Error. A nil logger means slog.Default().
func Logging(logger *slog.Logger) toolkit.Middleware { return CallLog{Logger: logger}.Middleware() }

// CallLog is Logging with the choices a very busy fleet wants: successful
// calls at another level (Debug, or off) and only one in SampleEvery of
// them. Failed calls are always logged, each one.
//
// The duration is a slog Duration: text handlers print it as Go does
// ("1.5ms"); a JSON handler prints nanoseconds unless its ReplaceAttr
// says otherwise (the worker's JSON logs give seconds as a float: see
// config.Config.Logger).
type CallLog struct {
	// Logger receives the lines; nil means slog.Default().
	Logger *slog.Logger
	// Success is the level of successful calls' lines (default Info);
	// SuccessOff drops them.
	Success slog.Level
	// SuccessOff logs failed calls only.
	SuccessOff bool
	// SampleEvery logs one in this many successful calls (0 or 1: all).
	SampleEvery int
}

// maxLoggedError bounds the error text of a call's log line.
const maxLoggedError = 200

// maxLoggedName bounds the tool name, call id and session of a call's log
// line: the caller chooses them (an invalid call id is answered, and
// logged, as it came), up to the size of a request.
const maxLoggedName = 256

// cutLogged is s cut to at most max bytes, at a character's start, with
// "…" when cut.
func cutLogged(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Middleware returns the logging middleware.
func (l CallLog) Middleware() toolkit.Middleware {
	logger := l.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var successes atomic.Uint64
	every := uint64(max(l.SampleEvery, 1))
	return func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) (err error) {
			start := time.Now()
			obs := &observer{w: w}
			defer func() {
				ended := err
				if obs.err != nil && outputFailed(obs.err) {
					ended = obs.err // the call failed by its output, whatever the handler returned
				}
				state, code := toolkit.Outcome(ctx, ended, obs.state)
				level := l.Success
				if v := recover(); v != nil {
					state, code, level = toolkit.StateError, toolkit.CodeInternal, slog.LevelError
					defer panic(v)
				} else if code == toolkit.CodeInternal {
					level = slog.LevelError
				} else if state != toolkit.StateSuccess {
					level = slog.LevelWarn
				} else if l.SuccessOff || successes.Add(1)%every != 0 || !logger.Enabled(ctx, level) {
					return
				}
				msg := ""
				if ended != nil {
					msg = toolkit.Failure(ctx, ended).Message
				}
				logger.LogAttrs(ctx, level, "tool call", callAttrs(&call.ToolCall, state, code, time.Since(start), obs.chunks, msg)...)
			}()
			return next(ctx, call, obs)
		}
	}
}

// callAttrs are the attributes of a call's line; msg, what went wrong, is
// cut short: a message may quote the call's input.
func callAttrs(call *toolkit.ToolCall, state toolkit.State, code toolkit.Code, took time.Duration, chunks int, msg string) []slog.Attr {
	attrs := []slog.Attr{
		slog.String("tool", cutLogged(call.Name, maxLoggedName)),
		slog.String("call", cutLogged(call.ID, maxLoggedName)),
		slog.String("session", cutLogged(call.Session, maxLoggedName)),
		slog.String("state", string(state)),
		slog.String("code", string(code)),
		slog.Duration("duration", took),
		slog.Int("chunks", chunks),
	}
	if msg != "" {
		attrs = append(attrs, slog.String("error", cutLogged(msg, maxLoggedError)))
	}
	if call.Identity != "" {
		attrs = append(attrs, slog.String("identity", call.Identity))
	}
	if call.Attempt > 0 {
		attrs = append(attrs, slog.Int("attempt", call.Attempt))
	}
	return attrs
}

// refusalsPerSecond bounds the lines Refusals writes.
const refusalsPerSecond = 100

// clock is Refusals' time (a test's own).
var clock = time.Now

// Refusals returns the hook (toolkit.Options.OnRefused) that logs the
// calls answered without running their middleware chain, which the
// middleware never sees: an unknown tool, an inactive group, input that
// does not validate, and what a transport reports (a bad request, an
// overloaded worker, a cancel that came first). Each is a failed call's
// line (Warn; Error for an internal error) with the duration 0 and no
// chunks. At most 100 such lines a second: a caller sending nothing but
// bad requests does not fill the disk with them; the next line written
// counts those left out ("suppressed").
func (l CallLog) Refusals() func(ctx context.Context, call toolkit.ToolCall, r *toolkit.Response) {
	logger := l.Logger
	if logger == nil {
		logger = slog.Default()
	}
	var mu sync.Mutex
	var window time.Time
	var written, suppressed int
	return func(ctx context.Context, call toolkit.ToolCall, r *toolkit.Response) {
		level := slog.LevelWarn
		switch {
		case r.Code == toolkit.CodeInternal:
			level = slog.LevelError
		case r.State == toolkit.StateSuccess:
			return // not a refusal
		}
		if !logger.Enabled(ctx, level) {
			return
		}
		mu.Lock()
		if now := clock(); now.Sub(window) >= time.Second {
			window, written = now, 0
		}
		if written >= refusalsPerSecond {
			suppressed++
			mu.Unlock()
			return
		}
		written++
		left := suppressed
		suppressed = 0
		mu.Unlock()
		attrs := callAttrs(&call, r.State, r.Code, 0, 0, r.Text())
		if left > 0 {
			attrs = append(attrs, slog.Int("suppressed", left))
		}
		logger.LogAttrs(ctx, level, "tool call", attrs...)
	}
}
