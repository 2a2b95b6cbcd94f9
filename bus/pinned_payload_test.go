package bus_test

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The client decodes frames with their strings sharing the message's
// payload, and the accumulator keeps a chunk's text as it is: a text of a
// byte kept the whole message alive. A tool that streams a little text
// with a large status in the chunk's metadata, each chunk's replacing
// the last, kept every message it sent in its caller (here 40 of 256 KiB)
// while the call's output counted a few hundred bytes and one status.
// What a call keeps is now about what it counts.
func TestChunksDoNotPinTheirMessages(t *testing.T) {
	s := natstest.Embedded(t, false)
	const n, pad = 48, 256 << 10
	next := make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("status", "Streams a byte of text with a large status, a chunk at a time.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			for i := range n {
				status := strings.Repeat(string(rune('a'+i%26)), pad)
				if err := w.Write(toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}}, State: toolkit.StateRunning, Metadata: map[string]any{"status": status}}); err != nil {
					return err
				}
				select { // the next chunk once the caller has this one: a message each
				case <-next:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)

	var before, after uint64
	chunks := 0
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "status"}) {
		if ev.Chunk == nil {
			continue
		}
		switch chunks++; chunks {
		case 8:
			before = heapInUse()
		case n:
			after = heapInUse()
		}
		next <- struct{}{}
	}
	if chunks != n {
		t.Fatalf("%d chunks, want %d", chunks, n)
	}
	if grew := int64(after) - int64(before); grew > 4<<20 {
		t.Errorf("the call's %d chunks after the 8th kept %d KiB in the client; each counts a byte of text and replaces a status of %d KiB", n-8, grew>>10, pad>>10)
	}
}

// A block costs the accumulator a few hundred bytes beyond the bytes
// toolkit.Chunk.Size counts for it (16): a stream of one-byte blocks that
// do not merge (text and data in turn) kept about ten times
// ClientOptions.MaxResultBytes in the caller before the bound ended the
// call (here 14,000 blocks for a bound of 256 KiB). The bound now counts
// what a block is kept in.
func TestManySmallBlocksBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(&toolkit.Options{MaxResultBytes: -1})
	mustAdd(t, tk, toolkit.Stream("confetti", "Streams one-byte text and data blocks in turn until stopped.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			for ctx.Err() == nil {
				c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: "x"}, {Type: toolkit.BlockData, Data: "eA=="}}, State: toolkit.StateRunning}
				if err := w.Write(c); err != nil {
					return err
				}
			}
			return ctx.Err()
		}))
	serve(t, natstest.Connect(t, s), tk, nil)
	const limit = 256 << 10
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxResultBytes: limit})
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "confetti"})
	if r.Code != toolkit.CodeToolError || !strings.Contains(r.Text(), "ClientOptions.MaxResultBytes") {
		t.Fatalf("final %s %s: %.200q", r.State, r.Code, r.Text())
	}
	if n := len(r.Content); n > 2*limit/256 {
		t.Errorf("%d blocks kept under a bound of %d bytes", n, limit)
	}
}
