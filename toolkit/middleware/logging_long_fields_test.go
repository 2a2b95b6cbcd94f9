package middleware_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// TestLoggingCutsCallersFields: the call id and the session are the
// caller's to choose, up to the size of a request. A call's line carried
// them whole: a caller naming a session of 100 KB (or a request whose
// invalid id is that long) wrote 100 KB lines, each of its calls, failed
// ones logged every one. They are cut as the error text is.
func TestLoggingCutsCallersFields(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, nil))
	tk := newToolkit(t, middleware.Logging(logger))
	mustAdd(t, tk, raw("fails", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return toolkit.NewError(toolkit.CodeToolError, "broken")
	}))
	long := strings.Repeat("é", 50_000)
	run(t, tk, context.Background(), toolkit.ToolCall{ID: "c1", Name: "fails", Session: long})
	refused := middleware.CallLog{Logger: logger}.Refusals()
	refused(context.Background(), toolkit.ToolCall{ID: long, Name: "echo", Session: long},
		toolkit.Final(long, toolkit.CodeInvalidInput, "BadRequestError: the call id is invalid."))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	for _, l := range lines {
		if len(l) > 2000 || !strings.Contains(l, "éé…") {
			t.Errorf("a line of %d bytes: %.300s…", len(l), l)
		}
	}
}
