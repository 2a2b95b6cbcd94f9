package bus

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCloseBetweenAttempts: Close comes after an attempt answered
// overloaded, before the client waits to send it again. Close ends the
// calls it cuts off unavailable, as it does one waiting out the
// attempt's retry_after_ms; this one ended overloaded, the retry having
// found no fleet to ask whether the tool may be sent again.
func TestCloseBetweenAttempts(t *testing.T) {
	s := natstest.Server(t)
	tk := toolkit.New(nil)
	mustAddT(t, tk, toolkit.Raw("busy", "Always overloaded.", map[string]any{"type": "object", "properties": map[string]any{}}, func(context.Context, *toolkit.Call, toolkit.Writer) error {
		e := toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: busy; retry after 50ms.")
		e.Metadata = map[string]any{wire.MetaRetryAfterMS: int64(50)}
		return e
	}), toolkit.ReadOnly())
	serveKV(t, s, tk, nil)
	c, err := NewClient(natstest.Conn(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	natstest.WaitFor(t, "the fleet to list busy", func() bool {
		f, err := c.Fleet(t.Context())
		if err != nil {
			return false
		}
		_, ok := f.Tool("busy")
		return ok
	})
	c.afterRun = func(string) { c.Close() }
	if r := c.Invoke(natstest.Ctx(t), toolkit.ToolCall{ID: "job", Name: "busy"}); r.Code != toolkit.CodeUnavailable {
		t.Fatalf("final %s %q after Close, want unavailable", r.Code, r.Text())
	}
}
