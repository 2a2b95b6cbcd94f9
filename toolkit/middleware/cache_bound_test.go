package middleware_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// A read-only tool that writes on past MaxResultBytes, ignoring the
// refusal, and returns nil: the cache recorded every chunk it wrote, the
// refused ones too (all of them, whatever the bound), and kept the call
// that failed tool_error as a hit, so the next call replayed the failure
// without running the tool.
func TestCacheKeepsNothingPastTheBound(t *testing.T) {
	tk := toolkit.New(&toolkit.Options{MaxResultBytes: 10_000})
	tk.Use(middleware.Cache{TTL: time.Minute}.Middleware())
	var runs counter
	chunk := strings.Repeat("x", 1000)
	mustAdd(t, tk, toolkit.Raw("big", "B.", lookupSchema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		runs.inc()
		for range 100 {
			_ = w.Write(toolkit.Text(chunk))
		}
		return nil
	}), toolkit.ReadOnly())
	for i := range 2 {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "b", Name: "big", Input: map[string]any{"q": "a"}})
		if r.Code != toolkit.CodeToolError {
			t.Fatalf("call %d: %s/%s, want tool_error", i+1, r.State, r.Code)
		}
	}
	if n := runs.runs(); n != 2 {
		t.Errorf("the tool ran %d times in two calls: its failed call was cached", n)
	}
}
