package bus_test

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// The client accumulated a call's streamed output without bound: a worker
// that sends without end (its own bound lifted, or not a toolbus worker
// at all) grew the caller until it ran out of memory. Past
// ClientOptions.MaxResultBytes the call is cancelled and ends tool_error,
// saying why, with the output up to the bound; the worker's own bound
// (toolkit.Options.MaxResultBytes) ends a call the same way on its side.
func TestClientResultBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	chunk := strings.Repeat("x", 1<<10)
	var stopped atomic.Bool
	flood := func() *toolkit.Tool {
		return toolkit.Stream("flood", "Stream 1 KiB chunks until stopped.",
			func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
				for {
					if err := w.Write(toolkit.Text(chunk)); err != nil {
						stopped.Store(true)
						return err
					}
					if ctx.Err() != nil {
						stopped.Store(true)
						return ctx.Err()
					}
				}
			})
	}
	unbounded := toolkit.New(&toolkit.Options{MaxResultBytes: -1})
	mustAdd(t, unbounded, flood())
	mustAdd(t, unbounded, toolkit.Stream("metaflood", "Stream metadata, a new key each time, until stopped.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			for i := 0; ctx.Err() == nil; i++ {
				if err := w.Write(toolkit.Chunk{Metadata: map[string]any{strconv.Itoa(i): chunk}}); err != nil {
					return err
				}
			}
			return ctx.Err()
		}))
	serve(t, natstest.Connect(t, s), unbounded, nil)
	const limit = 256 << 10
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxResultBytes: limit})

	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "flood"})
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "ToolOutputTooLargeError") || !strings.Contains(r.Text(), "ClientOptions.MaxResultBytes") {
		t.Fatalf("final %s %s: %.200q", r.State, r.Code, r.Text())
	}
	if n := len(r.Text()); n > limit+1024 {
		t.Errorf("%d bytes kept; the bound is %d", n, limit)
	}
	natstest.WaitFor(t, "the tool stopped", stopped.Load)

	// Output as metadata, a new key in every chunk, counts the same.
	r = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "metaflood"})
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "ClientOptions.MaxResultBytes") || len(r.Metadata) > limit/len(chunk)+1 {
		t.Fatalf("metadata flood: final %s %s, %d metadata keys: %.200q", r.State, r.Code, len(r.Metadata), r.Text())
	}

	// The worker's own bound, with the client's lifted: the worker ends it.
	s2 := natstest.Embedded(t, false)
	bounded := toolkit.New(&toolkit.Options{MaxResultBytes: limit})
	mustAdd(t, bounded, flood())
	serve(t, natstest.Connect(t, s2), bounded, nil)
	c2 := newClient(t, natstest.Connect(t, s2), &bus.ClientOptions{MaxResultBytes: -1})
	r = c2.Invoke(ctxT(t), toolkit.ToolCall{Name: "flood"})
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "ToolOutputTooLargeError") || strings.Contains(r.Text(), "ClientOptions") {
		t.Fatalf("worker-bounded final %s %s: %.200q", r.State, r.Code, r.Text())
	}
	if n := len(r.Text()); n > limit+1024 {
		t.Errorf("%d bytes kept; the worker's bound is %d", n, limit)
	}
}
