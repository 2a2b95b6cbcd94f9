package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// The final's metadata is the values as written: a caller that changes
// the nested maps and slices of a chunk's metadata, or a tool that
// reuses them for its next chunk, does not change it.
func TestMetadataCopiedWhenAccumulated(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("m", "M.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		nested := map[string]any{"v": 1.0}
		list := []any{1.0}
		strs := []string{"a"}
		if err := w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}},
			Metadata: map[string]any{"n": nested, "l": list, "s": strs}}); err != nil {
			return err
		}
		nested["v"], list[0], strs[0] = 2.0, 2.0, "b" // reused after the write
		return nil
	}))
	var final *toolkit.Response
	for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "1", Name: "m"}) {
		if ev.Chunk != nil {
			ev.Chunk.Metadata["n"].(map[string]any)["v"] = -1.0
			ev.Chunk.Metadata["n"].(map[string]any)["added"] = true
			ev.Chunk.Metadata["l"].([]any)[0] = -1.0
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	jsonEqual(t, "final metadata", final.Metadata, map[string]any{"n": map[string]any{"v": 1}, "l": []any{1}, "s": []string{"a"}})
}

// A metadata value that holds itself is copied within MetaSize's bounds
// and the call still ends (no endless copy, no stack overflow).
func TestMetadataHoldingItself(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("loop", "L.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		m := map[string]any{}
		m["self"] = m
		return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"m": m}})
	}))
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "loop"}); r.Text() != "x" {
		t.Errorf("final %s %q", r.Code, r.Text())
	}
}

// One that holds itself twice (2^64 paths) is not copied: the walk
// ends at its budget and the value is kept as it is (it counts past the
// default bound of a call's output, so only a toolkit without one
// takes it).
func TestMetadataHoldingItselfTwice(t *testing.T) {
	tk := newToolkit(t, &toolkit.Options{MaxResultBytes: -1})
	mustAdd(t, tk, toolkit.Raw("loop2", "L.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		m := map[string]any{}
		m["a"], m["b"] = m, m
		return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, Metadata: map[string]any{"m": m}})
	}))
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "loop2"}); r.Text() != "x" {
		t.Errorf("final %s %q", r.Code, r.Text())
	}
}
