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
			if d, ok := rec["duration"].(string); !ok || !strings.HasSuffix(d, "s") {
				t.Errorf("no readable duration in %v", rec)
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
