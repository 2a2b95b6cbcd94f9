package middleware_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

func okTool(name string) *toolkit.Tool {
	return raw(name, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		return w.Write(toolkit.Text("ok"))
	})
}

func TestRateLimit(t *testing.T) {
	type step struct {
		session, tool string
		advance       time.Duration
		wantOK        bool
		wantRetry     time.Duration // when refused
	}
	tests := []struct {
		name  string
		limit middleware.RateLimit
		steps []step
	}{
		{
			name:  "by session (zero value of By)",
			limit: middleware.RateLimit{Rate: 1, Burst: 2},
			steps: []step{
				{session: "a", tool: "x", wantOK: true},
				{session: "a", tool: "y", wantOK: true},
				{session: "a", tool: "x", wantOK: false, wantRetry: time.Second},
				{session: "b", tool: "x", wantOK: true}, // another session has its own bucket
				{session: "a", tool: "x", advance: 500 * time.Millisecond, wantOK: false, wantRetry: 500 * time.Millisecond},
				{session: "a", tool: "x", advance: 500 * time.Millisecond, wantOK: true},
				{session: "a", tool: "x", wantOK: false, wantRetry: time.Second},
				{session: "a", tool: "x", advance: time.Hour, wantOK: true}, // refilled to Burst, not beyond
				{session: "a", tool: "x", wantOK: true},
				{session: "a", tool: "x", wantOK: false, wantRetry: time.Second},
			},
		},
		{
			name:  "by tool",
			limit: middleware.RateLimit{Rate: 1, Burst: 1, By: middleware.ByTool},
			steps: []step{
				{session: "a", tool: "x", wantOK: true},
				{session: "b", tool: "x", wantOK: false, wantRetry: time.Second},
				{session: "b", tool: "y", wantOK: true},
			},
		},
		{
			name:  "by session and tool",
			limit: middleware.RateLimit{Rate: 2, Burst: 1, By: middleware.BySessionAndTool},
			steps: []step{
				{session: "a", tool: "x", wantOK: true},
				{session: "a", tool: "x", wantOK: false, wantRetry: 500 * time.Millisecond},
				{session: "a", tool: "y", wantOK: true},
				{session: "b", tool: "x", wantOK: true},
			},
		},
		{
			name:  "custom key",
			limit: middleware.RateLimit{Rate: 1, Burst: 1, Key: func(c *toolkit.Call) string { return "everyone" }},
			steps: []step{
				{session: "a", tool: "x", wantOK: true},
				{session: "b", tool: "y", wantOK: false, wantRetry: time.Second},
			},
		},
		{
			name:  "default burst is the rate rounded up",
			limit: middleware.RateLimit{Rate: 2.5},
			steps: []step{
				{session: "a", tool: "x", wantOK: true},
				{session: "a", tool: "x", wantOK: true},
				{session: "a", tool: "x", wantOK: true},
				{session: "a", tool: "x", wantOK: false, wantRetry: 400 * time.Millisecond},
			},
		},
		{
			// A token a thousand years away is no reason to retry in 1ms.
			name:  "a wait past what a Duration holds",
			limit: middleware.RateLimit{Rate: 1e-12, Burst: 1},
			steps: []step{
				{session: "a", tool: "x", wantOK: true},
				{session: "a", tool: "x", wantOK: false, wantRetry: time.Duration(math.MaxInt64).Truncate(time.Millisecond)},
			},
		},
		{
			name:  "default burst is at least one",
			limit: middleware.RateLimit{Rate: 0.5},
			steps: []step{
				{session: "", tool: "x", wantOK: true},
				{session: "", tool: "x", wantOK: false, wantRetry: 2 * time.Second},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			tt.limit.Now = clk.Now
			tk := newToolkit(t, tt.limit.Middleware())
			mustAdd(t, tk, okTool("x"))
			mustAdd(t, tk, okTool("y"))
			for i, st := range tt.steps {
				clk.Advance(st.advance)
				_, final := run(t, tk, context.Background(), toolkit.ToolCall{ID: fmt.Sprint(i), Name: st.tool, Session: st.session})
				if ok := final.State == toolkit.StateSuccess; ok != st.wantOK {
					t.Fatalf("step %d: %s/%s %q, want ok=%v", i, final.State, final.Code, final.Text(), st.wantOK)
				}
				if st.wantOK {
					continue
				}
				if final.Code != toolkit.CodeOverloaded {
					t.Errorf("step %d: code %s, want overloaded", i, final.Code)
				}
				if got := final.Metadata["retry_after_ms"]; got != st.wantRetry.Milliseconds() {
					t.Errorf("step %d: retry_after_ms = %v, want %d", i, got, st.wantRetry.Milliseconds())
				}
				want := fmt.Sprintf("RateLimitError: too many calls to '%s'; retry after %v.", st.tool, st.wantRetry)
				if final.Text() != want {
					t.Errorf("step %d: text %q, want %q", i, final.Text(), want)
				}
			}
		})
	}
}

func TestRateLimitZeroValueLimitsNothing(t *testing.T) {
	tk := newToolkit(t, middleware.RateLimit{}.Middleware())
	mustAdd(t, tk, okTool("x"))
	for i := range 200 {
		if _, final := run(t, tk, context.Background(), toolkit.ToolCall{ID: fmt.Sprint(i), Name: "x"}); final.State != toolkit.StateSuccess {
			t.Fatalf("call %d: %+v", i, final)
		}
	}
}

// Concurrent callers share a bucket exactly: Burst calls pass, no more.
func TestRateLimitConcurrent(t *testing.T) {
	clk := newClock()
	tk := newToolkit(t, middleware.RateLimit{Rate: 0.001, Burst: 10, Now: clk.Now}.Middleware())
	mustAdd(t, tk, okTool("x"))
	var ok, refused atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 10 {
				final := tk.Invoke(context.Background(), toolkit.ToolCall{ID: fmt.Sprint(g, i), Name: "x", Session: "s"})
				switch final.Code {
				case "":
					ok.Add(1)
				case toolkit.CodeOverloaded:
					refused.Add(1)
				default:
					t.Errorf("unexpected %+v", final)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 || refused.Load() != 70 {
		t.Errorf("ok %d, refused %d; want 10 and 70", ok.Load(), refused.Load())
	}
}
