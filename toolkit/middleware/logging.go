package middleware

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// Logging logs one line per call when the call ends: the tool, call ID,
// session, final state, code and duration (and the caller identity, when
// the call has one). Successful calls log at Info,
// failed ones at Warn, internal errors (and panics, which it logs and
// passes on for the toolkit to recover) at Error. A nil logger means
// slog.Default().
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
					slog.Duration("duration", time.Since(start)),
					slog.Int("chunks", obs.chunks),
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
