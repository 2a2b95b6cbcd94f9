package toolkit_test

import (
	"context"
	"fmt"
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

// BenchmarkRegister10k registers 10,000 raw tools (an MCP server's worth
// at MaxListedTools) in an empty toolkit: one Add each, which copies the
// registry every time (O(n²)), against one AddAll (one copy):
//
//	go test -run '^$' -bench BenchmarkRegister10k -benchtime 3x ./toolkit
func BenchmarkRegister10k(b *testing.B) {
	const n = 10_000
	schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	h := func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil }
	regs := make([]toolkit.Registration, n)
	for i := range regs {
		regs[i] = toolkit.Registration{Tool: toolkit.Raw(fmt.Sprintf("mcp__bench__tool%d", i), "A tool.", schema, h)}
	}
	b.Run("Add", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tk := toolkit.New(nil)
			for _, r := range regs {
				if err := tk.Add(r.Tool, r.Options...); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("AddAll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tk := toolkit.New(nil)
			if err := tk.AddAll(regs...); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkValueChunk measures ValueChunk of a function tool's small
// struct result: the walk before encoding/json, and its writing.
func BenchmarkValueChunk(b *testing.B) {
	type result struct {
		Name  string            `json:"name"`
		Count int               `json:"count"`
		Tags  []string          `json:"tags"`
		Attrs map[string]string `json:"attrs"`
	}
	v := result{Name: "report.txt", Count: 3, Tags: []string{"a", "b"}, Attrs: map[string]string{"owner": "ops"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := toolkit.ValueChunk(v); err != nil {
			b.Fatal(err)
		}
	}
}
