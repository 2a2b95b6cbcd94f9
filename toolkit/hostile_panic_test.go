package toolkit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// panics is a raw tool that writes chunks, then panics with v.
func panics(name string, v func() any, chunks ...toolkit.Chunk) *toolkit.Tool {
	return toolkit.Raw(name, "Panics.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		for _, c := range chunks {
			_ = w.Write(c)
		}
		panic(v())
	})
}

type panickyError struct{}

func (panickyError) Error() string { panic("Error panicked too") }

// A tool's panic ends its call internal, whatever the value: nil, an
// error, a runtime error, an error whose Error panics, a map or slice
// that holds itself (which fmt would print until the stack overflows, a
// crash no recover catches), a huge string.
func TestHostilePanicValues(t *testing.T) {
	checkGoroutines(t)
	cyclic := map[string]any{"name": "loop"}
	cyclic["self"] = cyclic
	cyclicSlice := []any{1}
	cyclicSlice[0] = cyclicSlice
	type holder struct{ M map[string]any }
	tests := []struct {
		name string
		v    func() any
		want string // in the final's text
	}{
		{"nil", func() any { return nil }, "panic called with nil"},
		{"error", func() any { return errors.New("an error value") }, "an error value"},
		{"runtime error", func() any { var s []int; _ = s[len(s)+3]; return nil }, "index out of range"},
		{"Error panics", func() any { return panickyError{} }, "Error panicked too"},
		{"cyclic map", func() any { return cyclic }, "map[string]interface {}"},
		{"cyclic slice", func() any { return cyclicSlice }, "[]interface {}"},
		{"pointer to a cycle", func() any { return &holder{cyclic} }, "holder"},
		{"huge", func() any { return strings.Repeat("x", 1<<20) }, "xxx"},
		{"number", func() any { return 42 }, "panic: 42"},
	}
	tk := newToolkit(t, nil)
	for i, tt := range tests {
		tool := "p" + string(rune('a'+i))
		mustAdd(t, tk, panics(tool, tt.v, toolkit.Text("partial ")))
		t.Run(tt.name, func(t *testing.T) {
			r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: tt.name, Name: tool})
			if r.final.Code != toolkit.CodeInternal || r.final.State != toolkit.StateError {
				t.Errorf("final = %s/%s, want error/internal", r.final.State, r.final.Code)
			}
			if text := r.final.Text(); !strings.HasPrefix(text, "partial InternalError") || !strings.Contains(text, tt.want) {
				t.Errorf("final text = %.200q, want the partial output, then the error naming %q", text, tt.want)
			}
		})
	}
}
