package middleware_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// A call whose context ended before it came ends interrupted behind the
// rate limiter and the cache too: the cache does not answer it (success,
// for a caller that is gone) and it takes no token from the calls that
// follow.
func TestEndedCallThroughRateLimitAndCache(t *testing.T) {
	clk := newClock()
	tk := newToolkit(t, middleware.RateLimit{Rate: 1, Burst: 1, Now: clk.Now}.Middleware(), middleware.Cache{}.Middleware())
	var runs counter
	mustAdd(t, tk, toolkit.Raw("x", "X.", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		runs.inc()
		return w.Write(toolkit.Text("ok"))
	}), toolkit.ReadOnly())
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "0", Name: "x"}); r.Text() != "ok" {
		t.Fatalf("first call: %s %q", r.Code, r.Text())
	}
	clk.Advance(2e9) // the bucket is full again
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "x"}); r.Code != toolkit.CodeInterrupted {
		t.Errorf("cancelled call: %s/%s %q, want interrupted", r.State, r.Code, r.Text())
	}
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "x"}); r.Code != "" || r.Text() != "ok" {
		t.Errorf("the call after it: %s %q, want the cached success", r.Code, r.Text())
	}
	if n := runs.runs(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}
