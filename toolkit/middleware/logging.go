package middleware

import (
	"context"
	"log/slog"
	"time"
	"unicode/utf8"

	"github.com/toolbus/toolbus/toolkit"
)

// Logging logs one line per call when the call ends: the tool, call ID,
// session, final state, code, duration (readable: "1.5ms"), the error text
// of a call whose handler failed (cut at 200 bytes) and the caller
// identity, when the call has one. Successful calls log at Info,
// failed ones at Warn, internal errors (and panics, which it logs and
// passes on for the toolkit to recover) at Error. A nil logger means
// slog.Default().
// maxLoggedError bounds the error text of a call's log line.
const maxLoggedError = 200

func Logging(logger *slog.Logger) toolkit.Middleware {
	if logger == nil {
		logger = slog.Default()
	}
	return func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) (err error) {
			start := time.Now()
			obs := &observer{w: w}
			defer func() {
				state, code := toolkit.Outcome(ctx, err, obs.state)
				level := slog.LevelInfo
				if v := recover(); v != nil {
					state, code, level = toolkit.StateError, toolkit.CodeInternal, slog.LevelError
					defer panic(v)
				} else if code == toolkit.CodeInternal {
					level = slog.LevelError
				} else if state != toolkit.StateSuccess {
					level = slog.LevelWarn
				}
				attrs := []slog.Attr{
					slog.String("tool", call.Name),
					slog.String("call", call.ID),
					slog.String("session", call.Session),
					slog.String("state", string(state)),
					slog.String("code", string(code)),
					// A readable duration ("1.5ms"), in JSON too, where
					// slog.Duration is bare nanoseconds.
					slog.String("duration", time.Since(start).String()),
					slog.Int("chunks", obs.chunks),
				}
				if err != nil {
					// What went wrong, cut short: a message may quote the
					// call's input.
					msg := toolkit.Failure(ctx, err).Message
					if len(msg) > maxLoggedError {
						cut := maxLoggedError
						for cut > 0 && !utf8.RuneStart(msg[cut]) {
							cut--
						}
						msg = msg[:cut] + "…"
					}
					attrs = append(attrs, slog.String("error", msg))
				}
				if call.Identity != "" {
					attrs = append(attrs, slog.String("identity", call.Identity))
				}
				logger.LogAttrs(ctx, level, "tool call", attrs...)
			}()
			return next(ctx, call, obs)
		}
	}
}
