package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCancelOfDeadlineWithCauseSaysDeadline: a call whose deadline was
// given a cause of its own (context.WithTimeoutCause) is cancelled as a
// deadline, so its worker ends it timeout, as the client and the toolkit
// end such a call (toolkit.ContextError). Its cancel said the caller
// cancelled: the worker's final said interrupted, or timeout when the
// worker's own timer fired first.
func TestCancelOfDeadlineWithCauseSaysDeadline(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	cancels := make(chan *nats.Msg, 4)
	sub, err := nc.ChanSubscribe(wire.CancelSubject("", "dl1"), cancels)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	hole(t, nc, "echo", nil) // takes the call and never answers
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxAttempts: 1, CancelGrace: 50 * time.Millisecond, StallTimeout: natstest.Guard})
	ctx, cancel := context.WithTimeoutCause(ctxT(t), 2*time.Second, errors.New("the agent's budget ran out"))
	defer cancel()
	done := make(chan *toolkit.Response, 1)
	go func() {
		done <- c.Invoke(ctx, toolkit.ToolCall{ID: "dl1", Name: "echo", Input: map[string]any{"text": "x"}})
	}()
	// Whether the hole takes the call before its deadline or (a loaded
	// machine) after it, the cancel comes when the deadline passes.
	select {
	case m := <-cancels:
		if string(m.Data) != wire.CancelReasonDeadline {
			t.Errorf("the cancel's reason: %q, want %q", m.Data, wire.CancelReasonDeadline)
		}
	case <-time.After(natstest.Guard):
		t.Fatal("no cancel")
	}
	if r := <-done; r.Code != toolkit.CodeTimeout {
		t.Errorf("final: %s %s %q, want timeout", r.State, r.Code, r.Text())
	}
}
