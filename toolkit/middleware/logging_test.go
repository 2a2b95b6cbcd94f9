package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

func TestLogging(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tk := newToolkit(t, middleware.Logging(logger))
	mustAdd(t, tk, raw("ok", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("fine"))
	}))
	mustAdd(t, tk, raw("fails", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return errors.New("broken")
	}))
	mustAdd(t, tk, raw("denies", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return toolkit.NewError(toolkit.CodeDenied, "no")
	}))
	mustAdd(t, tk, raw("error_chunk", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "isError"}}, State: toolkit.StateError})
	}))
	mustAdd(t, tk, raw("panics", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		panic("kaboom")
	}))
	mustAdd(t, tk, raw("blocks", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		<-ctx.Done()
		return errors.New("gave up") // a plain error after cancellation
	}))

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		tool      string
		ctx       context.Context
		wantLevel string
	}{
		{"ok", context.Background(), "INFO"},
		{"fails", context.Background(), "WARN"},
		{"denies", context.Background(), "WARN"},
		{"error_chunk", context.Background(), "WARN"},
		{"panics", context.Background(), "ERROR"},
		{"blocks", cancelled, "WARN"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			buf.Reset()
			_, final := run(t, tk, tt.ctx, toolkit.ToolCall{ID: "id-" + tt.tool, Name: tt.tool, Session: "sess"})
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			if len(lines) != 1 {
				t.Fatalf("got %d log lines, want 1: %q", len(lines), buf.String())
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"level": tt.wantLevel, "msg": "tool call", "tool": tt.tool, "call": "id-" + tt.tool, "session": "sess",
				"state": string(final.State), "code": string(final.Code),
			}
			for k, v := range want {
				if rec[k] != v {
					t.Errorf("%s = %v, want %v (the final response says %s/%s)", k, rec[k], v, final.State, final.Code)
				}
			}
			if d, ok := rec["duration"].(float64); !ok || d <= 0 {
				t.Errorf("no duration in %v", rec)
			}

		})
	}
	// The panic was passed on: the toolkit recovered it and keeps serving.
	buf.Reset()
	if _, final := run(t, tk, context.Background(), toolkit.ToolCall{Name: "ok"}); final.State != toolkit.StateSuccess {
		t.Errorf("after a panic: %+v", final)
	}
}

func TestLoggingNilLogger(t *testing.T) {
	tk := newToolkit(t, middleware.Logging(nil))
	mustAdd(t, tk, raw("ok", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil }))
	if _, final := run(t, tk, context.Background(), toolkit.ToolCall{Name: "ok"}); final.State != toolkit.StateSuccess {
		t.Errorf("final = %+v", final)
	}
}

// TestCallLog: successful calls can be logged at another level, sampled
// or not at all; failed calls are logged each time whatever the choice.
func TestCallLog(t *testing.T) {
	for _, tt := range []struct {
		name        string
		log         middleware.CallLog
		level       slog.Level
		wantSuccess int // lines of 6 successful calls
	}{
		{"default", middleware.CallLog{}, slog.LevelInfo, 6},
		{"debug, handler at info", middleware.CallLog{Success: slog.LevelDebug}, slog.LevelInfo, 0},
		{"debug, handler at debug", middleware.CallLog{Success: slog.LevelDebug}, slog.LevelDebug, 6},
		{"one in three", middleware.CallLog{SampleEvery: 3}, slog.LevelInfo, 2},
		{"off", middleware.CallLog{SuccessOff: true}, slog.LevelDebug, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tt.log.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tt.level}))
			tk := newToolkit(t, tt.log.Middleware())
			mustAdd(t, tk, raw("ok", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil }))
			mustAdd(t, tk, raw("fails", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return errors.New("broken") }))
			for range 6 {
				run(t, tk, context.Background(), toolkit.ToolCall{Name: "ok"})
			}
			for range 2 {
				run(t, tk, context.Background(), toolkit.ToolCall{Name: "fails"})
			}
			success, failed := strings.Count(buf.String(), `"tool":"ok"`), strings.Count(buf.String(), `"tool":"fails"`)
			if success != tt.wantSuccess || failed != 2 {
				t.Fatalf("%d lines of successful calls (want %d), %d of failed ones (want 2):\n%s", success, tt.wantSuccess, failed, &buf)
			}
		})
	}
}

// TestLoggingAttempt: a durable call's attempt is on its line.
func TestLoggingAttempt(t *testing.T) {
	var buf bytes.Buffer
	tk := newToolkit(t, middleware.Logging(slog.New(slog.NewJSONHandler(&buf, nil))))
	mustAdd(t, tk, raw("ok", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil }))
	run(t, tk, context.Background(), toolkit.ToolCall{Name: "ok", Attempt: 2})
	run(t, tk, context.Background(), toolkit.ToolCall{Name: "ok"})
	if lines := strings.Split(strings.TrimSpace(buf.String()), "\n"); len(lines) != 2 || !strings.Contains(lines[0], `"attempt":2`) || strings.Contains(lines[1], "attempt") {
		t.Fatalf("log lines:\n%s", &buf)
	}
}
