package toolkit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestTypedToolDoublingInput: an in-process call of a typed tool with a
// map field, whose input's maps hold the same next map twice, forty
// levels down (a few hundred bytes an "object" schema passes), was
// written as JSON to be decoded into the tool's struct, a terabyte in
// memory, until the process was killed; it ends invalid_input saying
// it is too large, and the same shape a few levels deep is decoded. In a
// child process, as the failure is a killed process.
func TestTypedToolDoublingInput(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_TYPED_DOUBLING_CHILD") {
		return
	}
	doubling := func(depth int) map[string]any {
		var m map[string]any
		for range depth {
			m = map[string]any{"x": m, "y": m}
		}
		return m
	}
	type in struct {
		Opts map[string]any `json:"opts"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("opts", "O.", func(ctx context.Context, in in) (int, error) { return len(in.Opts), nil }))
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: "opts", Input: map[string]any{"opts": doubling(40)}})
	if r.final.State != toolkit.StateError || r.final.Code != toolkit.CodeInvalidInput || !strings.Contains(r.final.Text(), "more than 64 MiB") {
		t.Errorf("forty levels: final = %s/%q %q, want invalid_input saying it would encode to more than 64 MiB", r.final.State, r.final.Code, r.final.Text())
	}
	r = collect(t, tk, context.Background(), toolkit.ToolCall{ID: "2", Name: "opts", Input: map[string]any{"opts": doubling(8)}})
	if r.final.State != toolkit.StateSuccess || r.final.Text() != "2" {
		t.Errorf("eight levels: final = %s %q, want success \"2\"", r.final.State, r.final.Text())
	}
}
