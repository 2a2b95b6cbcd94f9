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

// Close ends every call at once; a call waiting out an overloaded
// attempt's retry_after_ms (2s here) waited it out first, and only then
// found the client closed.
func TestCloseDuringRetryWait(t *testing.T) {
	s := natstest.Embedded(t, false)
	var runs atomic.Int64
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("busy", "Always overloaded.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		runs.Add(1)
		e := toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: busy; retry after 2s.")
		e.Metadata = map[string]any{wire.MetaRetryAfterMS: int64(2000)}
		return e
	}), toolkit.ReadOnly())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.Fleet(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "job-c", Name: "busy"}) }()
	for runs.Load() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the client now waits retry_after_ms
	closed := time.Now()
	c.Close()
	select {
	case r := <-done:
		if r.Code != toolkit.CodeUnavailable {
			t.Errorf("final %s %q after Close, want unavailable", r.Code, r.Text())
		}
	case <-time.After(time.Second):
		r := <-done
		t.Fatalf("the call ended %v after Close (%s %q): it waited out retry_after_ms", time.Since(closed).Round(time.Millisecond), r.Code, r.Text())
	}
}
