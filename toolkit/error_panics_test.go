package toolkit_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A tool returning an error whose Error method panics ends its call
// internal, and the log said the call "panicked before its tool ran",
// sending whoever read it to the group state and the validator; it now
// says the tool's error panicked, naming the tool.
func TestToolErrorPanicsLoggedAsTheTools(t *testing.T) {
	var log lockedBuffer
	tk := newToolkit(t, &toolkit.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	mustAdd(t, tk, toolkit.Raw("bad", "B.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return panickyError{}
	}))
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: "bad"})
	if r.final.Code != toolkit.CodeInternal || !strings.Contains(r.final.Text(), "Error panicked too") {
		t.Errorf("final %s %q, want internal naming the panic", r.final.Code, r.final.Text())
	}
	out := log.String()
	if strings.Contains(out, "before its tool ran") || !strings.Contains(out, "after its tool returned") || !strings.Contains(out, "tool=bad") {
		t.Errorf("the log says %.300q, want the tool's error named as what panicked", out)
	}
}
