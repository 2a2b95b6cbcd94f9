package bus_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A caller that stops taking a call's events while its tool streams had
// every frame queued in the client, without bound (a tool writing without
// end grew the caller until it ran out of memory). Past
// ClientOptions.MaxPending bytes waiting the call is cancelled and ends
// interrupted, saying why, with the output taken so far; a caller that
// keeps up is not affected.
func TestSlowConsumerBounded(t *testing.T) {
	s := natstest.Embedded(t, false)
	chunk := strings.Repeat("x", 32<<10)
	var cancelled atomic.Bool
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("flood", "Stream n chunks of 32 KiB.",
		func(ctx context.Context, in struct {
			N int `json:"n"`
		}, w toolkit.Writer) error {
			for range in.N {
				if err := w.Write(toolkit.Text(chunk)); err != nil {
					return err
				}
				time.Sleep(time.Millisecond)
				if ctx.Err() != nil {
					cancelled.Store(true)
					return ctx.Err()
				}
			}
			return nil
		}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxPending: 4 << 20})

	// Keeping up: every chunk arrives (8 MiB through a 4 MiB bound, so a
	// caller starved of the CPU for a while on a busy machine still keeps
	// up).
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "flood", Input: map[string]any{"n": 256}}); r.State != toolkit.StateSuccess || len(r.Text()) != 256*len(chunk) {
		t.Fatalf("a caller keeping up: %s %s, %d bytes", r.State, r.Code, len(r.Text()))
	}

	// Not taking events for a while: the call ends, and the tool (which
	// would write for at least 20 s more) is cancelled.
	var final *toolkit.Response
	got := 0
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "flood", Input: map[string]any{"n": 20000}}) {
		if ev.Chunk != nil {
			if got == 0 {
				time.Sleep(2 * time.Second)
			}
			got++
		}
		if ev.Final != nil {
			final = ev.Final
		}
	}
	if final == nil || final.Code != toolkit.CodeInterrupted || !strings.Contains(final.Text(), "SlowConsumerError") {
		t.Fatalf("final %+v", final)
	}
	if got >= 20000 {
		t.Errorf("%d chunks taken: the call was not cut short", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !cancelled.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !cancelled.Load() {
		t.Error("the tool was not cancelled")
	}
}
