package middleware_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// lookup is a read-only tool that streams two chunks (with metadata)
// and counts its runs; "fail" and "error_chunk" inputs make it fail.
func lookup(c *counter) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		n := c.inc()
		switch call.Input["q"] {
		case "fail":
			return toolkit.NewError(toolkit.CodeUnavailable, "backend down")
		case "error_chunk":
			return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "bad"}}, State: toolkit.StateError})
		}
		if err := w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, ID: "t", Text: fmt.Sprint("answer to ", call.Input["q"])}}, State: toolkit.StateRunning}); err != nil {
			return err
		}
		return w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, ID: "t", Text: fmt.Sprint(" (run ", n, ")")}}, State: toolkit.StateRunning, Metadata: map[string]any{"run": n}})
	}
}

var lookupSchema = map[string]any{"type": "object", "properties": map[string]any{
	"q":    map[string]any{"type": "string"},
	"opts": map[string]any{"type": "object"},
}}

func TestCache(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	var ro, rw counter
	tk := newToolkit(t, middleware.Cache{TTL: time.Minute, MaxEntries: 2, Now: clk.Now}.Middleware())
	mustAdd(t, tk, toolkit.Raw("lookup", "L.", lookupSchema, lookup(&ro)), toolkit.ReadOnly())
	mustAdd(t, tk, toolkit.Raw("write", "W.", lookupSchema, lookup(&rw)))

	steps := []struct {
		name     string
		tool     string
		input    map[string]any
		session  string
		advance  time.Duration
		wantText string
		wantRuns int // runs of the tool so far
	}{
		{name: "miss", tool: "lookup", input: map[string]any{"q": "a"}, wantText: "answer to a (run 1)", wantRuns: 1},
		{name: "hit replays the chunks", tool: "lookup", input: map[string]any{"q": "a"}, wantText: "answer to a (run 1)", wantRuns: 1},
		{name: "hit from another session", tool: "lookup", input: map[string]any{"q": "a"}, session: "other", wantText: "answer to a (run 1)", wantRuns: 1},
		{name: "canonical input: key order does not matter", tool: "lookup",
			input: map[string]any{"q": "b", "opts": map[string]any{"y": 1.0, "x": 2.0}}, wantText: "answer to b (run 2)", wantRuns: 2},
		{name: "same input, other map order", tool: "lookup",
			input: map[string]any{"opts": map[string]any{"x": 2.0, "y": 1}, "q": "b"}, wantText: "answer to b (run 2)", wantRuns: 2},
		{name: "a failure is not cached", tool: "lookup", input: map[string]any{"q": "fail"}, wantText: "backend down", wantRuns: 3},
		{name: "a failure is not cached (again)", tool: "lookup", input: map[string]any{"q": "fail"}, wantText: "backend down", wantRuns: 4},
		{name: "an error chunk is not cached", tool: "lookup", input: map[string]any{"q": "error_chunk"}, wantText: "bad", wantRuns: 5},
		{name: "an error chunk is not cached (again)", tool: "lookup", input: map[string]any{"q": "error_chunk"}, wantText: "bad", wantRuns: 6},
		{name: "still fresh just before the TTL", tool: "lookup", input: map[string]any{"q": "b", "opts": map[string]any{"x": 2, "y": 1}}, advance: time.Minute - time.Nanosecond,
			wantText: "answer to b (run 2)", wantRuns: 6},
		{name: "expired at the TTL", tool: "lookup", input: map[string]any{"q": "b", "opts": map[string]any{"x": 2, "y": 1}}, advance: time.Nanosecond,
			wantText: "answer to b (run 7)", wantRuns: 7},
		{name: "a fills the second slot again", tool: "lookup", input: map[string]any{"q": "a"}, wantText: "answer to a (run 8)", wantRuns: 8},
		{name: "c evicts the least recently used (b)", tool: "lookup", input: map[string]any{"q": "c"}, wantText: "answer to c (run 9)", wantRuns: 9},
		{name: "a survived", tool: "lookup", input: map[string]any{"q": "a"}, wantText: "answer to a (run 8)", wantRuns: 9},
		{name: "b was evicted", tool: "lookup", input: map[string]any{"q": "b", "opts": map[string]any{"x": 2, "y": 1}}, wantText: "answer to b (run 10)", wantRuns: 10},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		chunks, final := run(t, tk, ctx, toolkit.ToolCall{Name: st.tool, Input: st.input, Session: st.session})
		if final.Text() != st.wantText || ro.runs() != st.wantRuns {
			t.Fatalf("%s: %q after %d runs, want %q after %d", st.name, final.Text(), ro.runs(), st.wantText, st.wantRuns)
		}
		if final.State == toolkit.StateSuccess {
			if len(chunks) != 2 || final.Metadata["run"] == nil {
				t.Errorf("%s: %d chunks, metadata %v; want the two chunks with their metadata", st.name, len(chunks), final.Metadata)
			}
		}
	}

	// Tools that are not read-only always run.
	for i := 1; i <= 2; i++ {
		if _, final := run(t, tk, ctx, toolkit.ToolCall{Name: "write", Input: map[string]any{"q": "a"}}); final.Text() != fmt.Sprint("answer to a (run ", i, ")") {
			t.Errorf("write call %d: %q", i, final.Text())
		}
	}
}

func TestCachePerSessionAndCopies(t *testing.T) {
	ctx := context.Background()
	var c counter
	tk := newToolkit(t, middleware.Cache{PerSession: true}.Middleware())
	mustAdd(t, tk, toolkit.Raw("lookup", "L.", lookupSchema, lookup(&c)), toolkit.ReadOnly())
	in := map[string]any{"q": "a"}
	_, f1 := run(t, tk, ctx, toolkit.ToolCall{Name: "lookup", Input: in, Session: "s1"})
	_, f2 := run(t, tk, ctx, toolkit.ToolCall{Name: "lookup", Input: in, Session: "s2"})
	if f1.Text() == f2.Text() || c.runs() != 2 {
		t.Errorf("sessions shared an entry: %q %q", f1.Text(), f2.Text())
	}
	// A consumer that changes a replayed chunk does not change the cache.
	for ev := range tk.Call(ctx, toolkit.ToolCall{ID: "x", Name: "lookup", Input: in, Session: "s1"}) {
		if ev.Chunk != nil {
			ev.Chunk.Content[0].Text = "vandalised"
			ev.Chunk.Metadata = nil
		}
	}
	if _, f := run(t, tk, ctx, toolkit.ToolCall{Name: "lookup", Input: in, Session: "s1"}); f.Text() != f1.Text() || c.runs() != 2 {
		t.Errorf("after a consumer changed a replayed chunk: %q (runs %d)", f.Text(), c.runs())
	}
}

func TestCacheSkipsInterruptedCalls(t *testing.T) {
	var c counter
	tk := newToolkit(t, middleware.Cache{}.Middleware())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mustAdd(t, tk, raw("slow", func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		n := c.inc()
		if err := w.Write(toolkit.Text(fmt.Sprint("run ", n))); err != nil {
			return err
		}
		if n == 1 {
			cancel() // the caller gives up while the tool runs
			<-ctx.Done()
			return nil // gave up quietly, with partial output
		}
		return nil
	}), toolkit.ReadOnly())
	run(t, tk, ctx, toolkit.ToolCall{Name: "slow"})
	if _, f := run(t, tk, context.Background(), toolkit.ToolCall{Name: "slow"}); f.Text() != "run 2" {
		t.Errorf("the interrupted call's output was cached: %q", f.Text())
	}
	// A consumer that stops early does not leave a partial entry either.
	var c2 counter
	mustAdd(t, tk, toolkit.Raw("two", "T.", lookupSchema, lookup(&c2)), toolkit.ReadOnly())
	for ev := range tk.Call(context.Background(), toolkit.ToolCall{ID: "s", Name: "two", Input: map[string]any{"q": "a"}}) {
		if ev.Chunk != nil {
			break
		}
	}
	if _, f := run(t, tk, context.Background(), toolkit.ToolCall{Name: "two", Input: map[string]any{"q": "a"}}); f.Text() != "answer to a (run 2)" {
		t.Errorf("after an early stop: %q", f.Text())
	}
}
