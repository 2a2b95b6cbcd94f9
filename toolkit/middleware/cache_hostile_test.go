package middleware_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// TestCacheKeyOfDoublingInput: an in-process call's input a few hundred
// bytes in memory whose maps hold the same next map twice, forty levels
// down, passes validation (an "object" schema) and reaches the cache,
// whose key, its JSON, would be a terabyte, written by encoding/json in
// memory until the process was killed; it is not keyed (the tool runs,
// as for an input that is not JSON), and a plain input is still cached.
// In a child process, as the failure is a killed process.
func TestCacheKeyOfDoublingInput(t *testing.T) {
	if !ostest.InChild(t, "TOOLBUS_TEST_CACHE_KEY_CHILD") {
		return
	}
	var m map[string]any
	for range 40 {
		m = map[string]any{"x": m, "y": m}
	}
	var c counter
	tk := newToolkit(t, middleware.Cache{}.Middleware())
	mustAdd(t, tk, toolkit.Raw("lookup", "L.", lookupSchema, lookup(&c)), toolkit.ReadOnly())
	for i, in := range []map[string]any{{"q": "a", "opts": m}, {"q": "a", "opts": m}, {"q": "b"}, {"q": "b"}} {
		_, final := run(t, tk, context.Background(), toolkit.ToolCall{Name: "lookup", Input: in})
		if want := []int{1, 2, 3, 3}[i]; final.State != toolkit.StateSuccess || c.runs() != want {
			t.Errorf("call %d: %s %q after %d runs, want success after %d", i+1, final.State, final.Text(), c.runs(), want)
		}
	}
}
