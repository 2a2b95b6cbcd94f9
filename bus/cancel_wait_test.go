package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// Client.Cancel(id) while the client waits out an overloaded attempt's
// retry_after_ms (before the first retry) is lost: the call is not yet
// registered as retrying, the cancel goes to the ended first attempt only,
// and the second attempt is sent and runs to its end.
// A Cancel while the client waited out an overloaded attempt's
// retry_after_ms (before the first retry was sent) was lost: the next
// attempt ran to its end.
func TestCancelDuringRetryWait(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int64
	ran := make(chan struct{}, 4)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("slow", "Overloaded once, then slow.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if runs.Add(1) == 1 {
			e := toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: busy; retry after 1s.")
			e.Metadata = map[string]any{wire.MetaRetryAfterMS: int64(1000)}
			return e
		}
		ran <- struct{}{}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
			return w.Write(toolkit.Text("finished"))
		}
	}), toolkit.ReadOnly())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.Fleet(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "job-w", Name: "slow"}) }()
	for runs.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the client now waits retry_after_ms
	if err := c.Cancel("job-w"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Code != toolkit.CodeInterrupted {
			t.Fatalf("final %s %q after Cancel during the retry wait, want interrupted (runs %d)", r.Code, r.Text(), runs.Load())
		}
	case <-ran:
		t.Fatalf("Cancel(job-w) during the retry wait did not stop the call: a second attempt ran (runs %d)", runs.Load())
	}
}
