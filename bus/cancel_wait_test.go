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

// A Cancel while the client waited out an overloaded attempt's
// retry_after_ms (before the first retry was sent) was lost: the call was
// not yet registered as retrying, the cancel went to the ended first
// attempt only, and the next attempt ran to its end. Here the wait never
// ends of itself, so only the Cancel can end the call, and no attempt
// runs after the first.
func TestCancelDuringRetryWait(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int64
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("slow", "Overloaded once, then slow.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if runs.Add(1) == 1 {
			e := toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: busy; retry after 2s.")
			e.Metadata = map[string]any{wire.MetaRetryAfterMS: 2000}
			return e
		}
		<-ctx.Done()
		return ctx.Err()
	}), toolkit.ReadOnly())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	waits := holdRetryWait(t, c)
	if _, err := c.Fleet(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	const id = "job-w"
	done := make(chan *toolkit.Response, 1)
	// No deadline of its own: only the Cancel (or the test's end) ends it.
	go func() { done <- c.Invoke(t.Context(), toolkit.ToolCall{ID: id, Name: "slow"}) }()
	select {
	case d := <-waits:
		if d != 2*time.Second {
			t.Fatalf("the client waits %v before sending the call again, want the 2s the tool asked", d)
		}
	case r := <-done:
		t.Fatalf("final %s %q before any retry wait (runs %d)", r.Code, r.Text(), runs.Load())
	case <-time.After(natstest.Guard):
		t.Fatal("the client never waited to send the overloaded call again")
	}
	if err := c.Cancel(id); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Code != toolkit.CodeInterrupted {
			t.Fatalf("final %s %q after Cancel during the retry wait, want interrupted (runs %d)", r.Code, r.Text(), runs.Load())
		}
	case <-time.After(natstest.Guard):
		t.Fatalf("Cancel(%s) did not end the call waiting out retry_after_ms (whose timer never fires): the call still waited %v later (runs %d)", id, natstest.Guard, runs.Load())
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times, want once: the Cancel during the retry wait let the call be sent again", n)
	}
}
