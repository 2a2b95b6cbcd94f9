package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// MaxPending counted only the payload of the frames waiting for a stalled
// caller. A tool sending small frames (a progress report in a loop: each
// one frame, never batched) had tens of thousands of messages held, each
// costing the caller far more than its payload (the message, its subject
// and its place in the queue: well over 128 bytes), so the memory held
// was many times the bound. What a frame costs to hold now counts.
func TestSlowConsumerSmallFrames(t *testing.T) {
	s := natstest.Embedded(t, false)
	var cancelled atomic.Bool
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("pflood", "Report progress until stopped.",
		func(ctx context.Context, _ struct{}, w toolkit.Writer) error {
			for i := 0; ctx.Err() == nil; i++ {
				if err := w.Progress(toolkit.Progress{Progress: float64(i)}); err != nil {
					break
				}
			}
			cancelled.Store(true)
			return ctx.Err()
		}))
	serve(t, natstest.Connect(t, s), tk, nil)
	const limit = 256 << 10
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxPending: limit})

	var final *toolkit.Response
	progress := 0
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "pflood"}) {
		if ev.Progress != nil {
			if progress == 0 {
				// Stalled until the client gave up on this caller and
				// cancelled the tool.
				natstest.WaitFor(t, "the tool cancelled", cancelled.Load)
			}
			progress++
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final == nil || final.Code != toolkit.CodeInterrupted || !strings.Contains(final.Text(), "SlowConsumerError") {
		t.Fatalf("final %+v", final)
	}
	// Every report handed over after the stall was held meanwhile.
	const minCost = 128
	if progress*minCost > limit {
		t.Errorf("%d progress reports were held for a stalled caller: at %d bytes each at least, over the bound of %d bytes", progress, minCost, limit)
	}
}
