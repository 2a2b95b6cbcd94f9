package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// Close ends every call at once; a call waiting out an overloaded
// attempt's retry_after_ms waited it out first, and only then found the
// client closed. Here the wait never ends of itself, so only Close can
// end the call.
func TestCloseDuringRetryWait(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("busy", "Always overloaded.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		e := toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: busy; retry after 2s.")
		e.Metadata = map[string]any{wire.MetaRetryAfterMS: 2000}
		return e
	}), toolkit.ReadOnly())
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	waits := holdRetryWait(t, c)
	if _, err := c.Fleet(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolkit.Response, 1)
	// No deadline of its own: only Close (or the test's end) ends it.
	go func() { done <- c.Invoke(t.Context(), toolkit.ToolCall{ID: "job-c", Name: "busy"}) }()
	select {
	case d := <-waits:
		if d != 2*time.Second {
			t.Fatalf("the client waits %v before sending the call again, want the 2s the tool asked", d)
		}
	case r := <-done:
		t.Fatalf("final %s %q before any retry wait", r.Code, r.Text())
	case <-time.After(natstest.Guard):
		t.Fatal("the client never waited to send the overloaded call again")
	}
	c.Close()
	select {
	case r := <-done:
		if r.Code != toolkit.CodeUnavailable {
			t.Fatalf("final %s %q after Close, want unavailable", r.Code, r.Text())
		}
	case <-time.After(natstest.Guard):
		t.Fatalf("Close did not end the call waiting out retry_after_ms (whose timer never fires): the call still waited %v later", natstest.Guard)
	}
}
