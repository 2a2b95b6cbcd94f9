package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// A call whose output the toolkit refused (past MaxResultBytes, or a
// chunk it cannot merge) failed, whatever its tool returns afterwards:
// its log line says so, as the final does, for a tool that ignores the
// refusal too.
func TestLoggingOutputRefused(t *testing.T) {
	urlData := func(id string) toolkit.Chunk {
		return toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: id, URL: "https://example.com/a.png", MediaType: "image/png"}}}
	}
	tests := []struct {
		name  string
		write func(w toolkit.Writer)
	}{
		{"too_large", func(w toolkit.Writer) {
			_ = w.Write(toolkit.Text(strings.Repeat("x", 200)))
		}},
		{"unmergeable", func(w toolkit.Writer) {
			_ = w.Write(urlData("img"))
			_ = w.Write(urlData("img"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			logger := slog.New(slog.NewJSONHandler(&buf, nil))
			tk := toolkit.New(&toolkit.Options{MaxResultBytes: 128})
			tk.Use(middleware.Logging(logger))
			mustAdd(t, tk, raw("out", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				tt.write(w)
				return nil // the refusal ignored
			}))
			_, final := run(t, tk, context.Background(), toolkit.ToolCall{Name: "out"})
			if final.Code != toolkit.CodeToolError {
				t.Fatalf("final code %q, want tool_error", final.Code)
			}
			var line map[string]any
			if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
				t.Fatalf("log %q: %v", buf.String(), err)
			}
			if line["state"] != string(final.State) || line["code"] != string(final.Code) || line["level"] != "WARN" || line["error"] == nil {
				t.Errorf("log line %v, want state %q, code %q, an error, at WARN (the final's)", line, final.State, final.Code)
			}
		})
	}
}

// sinkWriter is a consumer whose Write fails with a tool_error of its
// own, as any writer may.
type sinkWriter struct{}

func (sinkWriter) Write(toolkit.Chunk) error {
	return toolkit.NewError(toolkit.CodeToolError, "SinkError: the sink is full")
}
func (sinkWriter) Progress(toolkit.Progress) error { return nil }

// A writer's own tool_error from Write was read as the toolkit refusing
// the call's output, so the line said the call failed with the writer's
// text while the final, which the toolkit builds, said success. Only the
// toolkit's refusals end the call now (toolkit.ErrUnmergeable,
// toolkit.ErrOutputTooLarge); the line says what the final says.
func TestLoggingWriterErrorIsNotARefusal(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	tk := toolkit.New(nil)
	tk.Use(middleware.Logging(logger))
	mustAdd(t, tk, raw("out", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		_ = w.Write(toolkit.Text("a"))
		return nil // the writer's error ignored
	}))
	final := tk.Dispatch(context.Background(), toolkit.ToolCall{ID: "c", Name: "out"}, sinkWriter{})
	var line map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(buf.Bytes()), &line); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	if line["state"] != string(final.State) || line["code"] != string(final.Code) {
		t.Errorf("log line %v, want state %q and code %q (the final's)", line, final.State, final.Code)
	}
}
