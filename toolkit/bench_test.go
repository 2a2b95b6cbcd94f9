package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// passThrough is the cheapest possible middleware: it only forwards.
func passThrough(next toolkit.Handler) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return next(ctx, call, w)
	}
}

type benchIn struct {
	Text string `json:"text"`
}

func benchToolkit(b *testing.B, tool *toolkit.Tool) *toolkit.Toolkit {
	b.Helper()
	tk := toolkit.New(nil)
	tk.Use(passThrough, passThrough, passThrough)
	if err := tk.Add(tool); err != nil {
		b.Fatal(err)
	}
	return tk
}

// BenchmarkCall measures one in-process call of a trivial tool through
// three toolkit-level middlewares: lookup, validation, the onion, one chunk
// and the accumulated final response.
func BenchmarkCall(b *testing.B) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}
	tools := []struct {
		name string
		tool *toolkit.Tool
	}{
		{"raw", toolkit.Raw("echo", "Echo.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			return w.Write(toolkit.Text(call.Input["text"].(string)))
		})},
		{"typed", toolkit.Func("echo", "Echo.", func(ctx context.Context, in benchIn) (string, error) { return in.Text, nil })},
	}
	for _, tc := range tools {
		b.Run(tc.name, func(b *testing.B) {
			tk := benchToolkit(b, tc.tool)
			call := toolkit.ToolCall{ID: "c1", Name: "echo", Input: map[string]any{"text": "hi"}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				var final *toolkit.Response
				for ev := range tk.Call(ctx, call) {
					if ev.Final != nil {
						final = ev.Final
					}
				}
				if final == nil || final.State != toolkit.StateSuccess {
					b.Fatalf("final = %+v", final)
				}
			}
		})
	}
}
