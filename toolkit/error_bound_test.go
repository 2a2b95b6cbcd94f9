package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A tool's error message was written into the final whole, past
// Options.MaxResultBytes: a tool returning an error that quotes 10 MiB
// (a command's whole output, a body) under a bound of 1 MiB answered 10
// MiB. The message is now cut to what the bound leaves (a KiB at least),
// saying how much was cut.
func TestErrorMessageBounded(t *testing.T) {
	const limit = 1 << 20
	tk := newToolkit(t, &toolkit.Options{MaxResultBytes: limit})
	huge := "failed: " + strings.Repeat("é", 5<<20)
	mustAdd(t, tk, toolkit.Raw("loud", "L.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if err := w.Write(toolkit.Text(strings.Repeat("x", limit/2))); err != nil {
			return err
		}
		return errors.New(huge)
	}))
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: "loud"})
	text := r.final.Text()
	if r.final.State != toolkit.StateError || r.final.Code != toolkit.CodeToolError {
		t.Errorf("final %s/%s, want error/tool_error", r.final.State, r.final.Code)
	}
	if len(text) > limit+1024 {
		t.Fatalf("the final holds %d bytes under a bound of %d", len(text), limit)
	}
	msg := strings.TrimLeft(text, "x")
	if !strings.HasPrefix(msg, "failed: éé") || !strings.Contains(msg, "more bytes of the message cut)") || !strings.ContainsRune(msg, '…') {
		t.Errorf("the message is %.60q…%.60q, want its start and how much was cut", msg, msg[max(len(msg)-60, 0):])
	}
	if !strings.HasPrefix(msg, "failed") || strings.ContainsRune(msg, '\uFFFD') {
		t.Errorf("the message was cut inside a character")
	}
}
