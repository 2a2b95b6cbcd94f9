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
