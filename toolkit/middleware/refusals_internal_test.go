package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// TestRefusalsLines: a refused call's line is a failed call's (Warn,
// Error for an internal error; none for a success), and at most 100 are
// written a second, the next line counting those left out.
func TestRefusalsLines(t *testing.T) {
	at := time.Unix(1000, 0)
	clock = func() time.Time { return at }
	t.Cleanup(func() { clock = time.Now })
	var buf bytes.Buffer
	hook := CallLog{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}.Refusals()
	ctx := context.Background()
	call := toolkit.ToolCall{ID: "c1", Name: "echo", Session: "s1", Identity: "alice", Attempt: 2}

	hook(ctx, call, toolkit.Final("c1", toolkit.CodeInvalidInput, "Input validation failed for tool 'echo': "+strings.Repeat("x", 300)))
	hook(ctx, call, toolkit.Final("c1", toolkit.CodeInternal, "InternalError: boom"))
	hook(ctx, call, &toolkit.Response{ID: "c1", State: toolkit.StateSuccess})
	var lines []map[string]any
	for l := range strings.Lines(buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	first := lines[0]
	for k, v := range map[string]any{"msg": "tool call", "level": "WARN", "tool": "echo", "call": "c1", "session": "s1", "state": "error", "code": "invalid_input", "identity": "alice", "attempt": float64(2), "duration": float64(0), "chunks": float64(0)} {
		if first[k] != v {
			t.Errorf("%s = %v, want %v", k, first[k], v)
		}
	}
	if e, _ := first["error"].(string); len(e) > maxLoggedError+len("…") || !strings.HasPrefix(e, "Input validation failed") {
		t.Errorf("error %q: not cut at %d bytes", e, maxLoggedError)
	}
	if lines[1]["level"] != "ERROR" || lines[1]["code"] != "internal" {
		t.Errorf("an internal error's line: %v", lines[1])
	}

	buf.Reset()
	for range 150 {
		hook(ctx, call, toolkit.Final("c1", toolkit.CodeOverloaded, "OverloadedError"))
	}
	if n := strings.Count(buf.String(), "\n"); n != refusalsPerSecond-2 {
		t.Errorf("%d lines within the second, want %d (%d written before)", n, refusalsPerSecond-2, 2)
	}
	at = at.Add(time.Second)
	buf.Reset()
	hook(ctx, call, toolkit.Final("c1", toolkit.CodeOverloaded, "OverloadedError"))
	if !strings.Contains(buf.String(), `"suppressed":52`) {
		t.Errorf("the next second's line does not count the 52 left out: %s", buf.String())
	}
}
