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

// Close ends every call at once; a call waiting out an overloaded
// attempt's retry_after_ms waited it out first, and only then found the
// client closed. The client has no clock a test can hold, and such a call
// ends unavailable either way; what the defect cannot do is end it before
// the wait could be over (it starts after the tool answered). A round in
// which the call ended later tells nothing (a loaded machine may have
// been slow to close): it is played again, and only a call that never
// ends early fails the test.
func TestCloseDuringRetryWait(t *testing.T) {
	const rounds = 10
	s := natstest.Embedded(t, false)
	var answered atomic.Pointer[time.Time]
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("busy", "Always overloaded.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		e := toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: busy; retry after 2s.")
		e.Metadata = map[string]any{wire.MetaRetryAfterMS: retryAfterMost.Milliseconds()}
		now := time.Now()
		answered.Store(&now)
		return e
	}), toolkit.ReadOnly())
	serve(t, natstest.Connect(t, s), tk, nil)
	for round := 1; ; round++ {
		c := newClient(t, natstest.Connect(t, s), nil)
		if _, err := c.Fleet(ctxT(t)); err != nil {
			t.Fatal(err)
		}
		done := make(chan *toolkit.Response, 1)
		go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: fmt.Sprint("job-c", round), Name: "busy"}) }()
		waitRetryWait(t)
		c.Close()
		r := <-done
		ended := time.Now()
		if r.Code != toolkit.CodeUnavailable {
			t.Fatalf("final %s %q after Close, want unavailable", r.Code, r.Text())
		}
		over := answered.Load().Add(retryAfterMost) // the earliest the wait could end
		if ended.Before(over) {
			return
		}
		if round == rounds {
			t.Fatalf("in %d rounds the call closed during its retry wait never ended before the wait's %v were over: Close did not end the wait", rounds, retryAfterMost)
		}
		t.Logf("round %d: the call ended %v after the wait could be over; again", round, ended.Sub(over).Round(time.Millisecond))
	}
}
