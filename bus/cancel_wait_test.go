package bus_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// A Cancel while the client waited out an overloaded attempt's
// retry_after_ms (before the first retry was sent) was lost: the call was
// not yet registered as retrying, the cancel went to the ended first
// attempt only, and the next attempt ran to its end. The test cancels once
// the client waits; a Cancel that returned before the wait could be over
// leaves no attempt to run. One that returned later (a loaded machine)
// may meet the next attempt, which it must then interrupt, and the round
// is played again.
func TestCancelDuringRetryWait(t *testing.T) {
	const rounds = 10
	s := natstest.Embedded(t, false)
	var runs atomic.Int64 // of the round's call
	var answered atomic.Pointer[time.Time]
	ran := make(chan struct{}, 4)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("slow", "Overloaded once, then slow.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if runs.Add(1) == 1 {
			e := toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: busy; retry after 2s.")
			e.Metadata = map[string]any{wire.MetaRetryAfterMS: retryAfterMost.Milliseconds()}
			now := time.Now()
			answered.Store(&now)
			return e
		}
		ran <- struct{}{}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(natstest.Guard):
			return w.Write(toolkit.Text("finished"))
		}
	}), toolkit.ReadOnly())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.Fleet(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= rounds; round++ {
		runs.Store(0)
		id := fmt.Sprint("job-w", round)
		done := make(chan *toolkit.Response, 1)
		go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: id, Name: "slow"}) }()
		waitRetryWait(t)
		if err := c.Cancel(id); err != nil {
			t.Fatal(err)
		}
		over := answered.Load().Add(retryAfterMost) // the earliest the wait could end
		late := time.Since(over)
		if late < 0 {
			select {
			case r := <-done:
				if r.Code != toolkit.CodeInterrupted {
					t.Fatalf("final %s %q after Cancel during the retry wait, want interrupted (runs %d)", r.Code, r.Text(), runs.Load())
				}
			case <-ran:
				t.Fatalf("Cancel(%s) during the retry wait did not stop the call: a second attempt ran (runs %d)", id, runs.Load())
			}
			return
		}
		if r := <-done; r.Code != toolkit.CodeInterrupted {
			t.Fatalf("final %s %q after a Cancel %v past the retry wait, want interrupted (runs %d)", r.Code, r.Text(), late.Round(time.Millisecond), runs.Load())
		}
		t.Logf("round %d: Cancel returned %v after the wait could be over; again", round, late.Round(time.Millisecond))
		select {
		case <-ran:
		default:
		}
	}
	t.Skipf("in %d rounds no Cancel returned before the client's retry wait could be over", rounds)
}
