package middleware_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// run calls a tool and returns its chunks and final response, checking
// there is exactly one final and it is last.
func run(t *testing.T, tk *toolkit.Toolkit, ctx context.Context, call toolkit.ToolCall) ([]toolkit.Chunk, *toolkit.Response) {
	t.Helper()
	if call.ID == "" {
		call.ID = "call"
	}
	var chunks []toolkit.Chunk
	var final *toolkit.Response
	for ev := range tk.Call(ctx, call) {
		if final != nil {
			t.Fatalf("event after the final: %+v", ev)
		}
		if ev.Chunk != nil {
			chunks = append(chunks, *ev.Chunk)
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final == nil || final.ID != call.ID {
		t.Fatalf("final = %+v, want one with ID %q", final, call.ID)
	}
	return chunks, final
}

func newToolkit(t *testing.T, mws ...toolkit.Middleware) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(nil)
	if len(mws) > 0 {
		tk.Use(mws...)
	}
	return tk
}

func mustAdd(t *testing.T, tk *toolkit.Toolkit, tool *toolkit.Tool, opts ...toolkit.Option) {
	t.Helper()
	if err := tk.Add(tool, opts...); err != nil {
		t.Fatal(err)
	}
}

// counter is a tool body that counts its runs.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return c.n
}

func (c *counter) runs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// clock is a manual clock for TTLs and token buckets.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func raw(name string, h toolkit.Handler) *toolkit.Tool {
	return toolkit.Raw(name, "Test tool.", nil, h)
}

type textIn struct {
	Text string `json:"text"`
}
