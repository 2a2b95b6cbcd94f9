package mcp

import (
	"context"
	"log/slog"
	"time"

	"github.com/toolbus/toolbus/internal/loglimit"
)

// minLevel drops records below a level: the go-sdk logs every session's
// connect and disconnect at info.
type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.min}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.min}
}

// sdkLogPerSecond bounds the go-sdk's lines the gateway passes on to its
// logger a second. A client causes some of them at will, as many as it
// sends messages: the go-sdk logs an error for each duplicate
// notifications/initialized of a session and for each request of a
// session-less POST that does not initialize, and one batch POST of an
// old protocol version holds up to maxBatch of them.
const sdkLogPerSecond = 100

// lineLimit lets at most sdkLogPerSecond lines a second through (as the
// bus worker does its unanswerable requests' lines), all sessions'
// together: a client flooding the log crowds out the others' lines for
// that second, whose number the next line passed then says.
type lineLimit struct {
	now func() time.Time
	l   loglimit.Limit
}

// take reports whether a line may be written now, and how many were left
// out since the last one written.
func (l *lineLimit) take() (suppressed int, ok bool) {
	return l.l.Take(sdkLogPerSecond, l.now())
}

// limited passes at most what its lineLimit lets through, the first line
// after some were left out saying how many ("suppressed").
type limited struct {
	slog.Handler
	l *lineLimit
}

func (h limited) Handle(ctx context.Context, r slog.Record) error {
	left, ok := h.l.take()
	if !ok {
		return nil
	}
	if left > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("suppressed", left))
	}
	return h.Handler.Handle(ctx, r)
}

func (h limited) WithAttrs(attrs []slog.Attr) slog.Handler {
	return limited{h.Handler.WithAttrs(attrs), h.l}
}

func (h limited) WithGroup(name string) slog.Handler {
	return limited{h.Handler.WithGroup(name), h.l}
}
