package middleware_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// The cache keys a call by its tool's presets too, which the input the
// middleware sees does not hold: a tool registered again with another
// preset (the account it reads) is not answered with the other
// account's result, while calls of one registration still hit.
func TestCacheKeysByPresets(t *testing.T) {
	tk := newToolkit(t, middleware.Cache{}.Middleware())
	schema := map[string]any{"type": "object", "properties": map[string]any{"account": map[string]any{"type": "string"}}}
	h := func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text(fmt.Sprint("balance of ", call.Input["account"])))
	}
	var runs counter
	h0 := h
	h = func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		runs.inc()
		return h0(ctx, call, w)
	}
	mustAdd(t, tk, toolkit.Raw("balance", "B.", schema, h), toolkit.ReadOnly(), toolkit.WithPresets(map[string]any{"account": "alice"}))
	for i := range 2 {
		if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "balance"}); r.Text() != "balance of alice" {
			t.Fatalf("call %d: %q", i, r.Text())
		}
	}
	if n := runs.runs(); n != 1 {
		t.Errorf("the tool ran %d times for two equal calls, want 1", n)
	}
	mustAdd(t, tk, toolkit.Raw("balance", "B.", schema, h), toolkit.ReadOnly(), toolkit.WithPresets(map[string]any{"account": "bob"}), toolkit.OnConflict(toolkit.ConflictOverride))
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "balance"})
	if r.Text() != "balance of bob" {
		t.Errorf("after the preset changed: %q", r.Text())
	}
}
