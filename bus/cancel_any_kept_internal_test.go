package bus

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCancelOfAnyCallOutlivesOneCallsCancel: a cancel without
// Toolbus-Reply (toolctl cancel, Client.Cancel) leaves a tombstone that
// the next call under its id meets. A caller's cancel of one call that
// came after it (a call of that id that had ended, its cancel late)
// replaced that tombstone with its own, which spares any other call: the
// call toolctl cancel was for ran.
func TestCancelOfAnyCallOutlivesOneCallsCancel(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct{}) (string, error) { return "ran", nil })); err != nil {
		t.Fatal(err)
	}
	w := serve(t, natstest.Connect(t, s), tk, nil)

	nc := natstest.Connect(t, s)
	if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("", "x1"), "")); err != nil { // any call x1
		t.Fatal(err)
	}
	late := cancelMsg(wire.CancelSubject("", "x1"), "") // of an x1 that ended
	late.Header.Set(wire.HeaderReply, "_INBOX.gone.1")
	if err := nc.PublishMsg(late); err != nil {
		t.Fatal(err)
	}
	// After both on the same subscription: once it is kept, they were handled.
	if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("", "marker"), "")); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the cancels to be handled", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, ok := w.tombs[callKey("", "marker")]
		return ok
	})
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Guard)
	defer cancel()
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "x1", Name: "echo"}); r.Code != toolkit.CodeInterrupted {
		t.Fatalf("a call after its id's cancel: %s %s %q, want interrupted without running", r.State, r.Code, r.Text())
	}
}
