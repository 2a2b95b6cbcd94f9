package bus_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestToolOverloadedAnswerSurvivesCancel: a tool with effects ran and
// answered overloaded (its upstream refused it for load) as its caller's
// Cancel reached it. The call was never to be sent again, and the tool
// ran: its answer is the call's, not "cancelled before it was sent
// again".
func TestToolOverloadedAnswerSurvivesCancel(t *testing.T) {
	s := natstest.Embedded(t, false)
	entered := make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("charge", "Charges a card.", map[string]any{"type": "object", "properties": map[string]any{}},
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			close(entered)
			<-ctx.Done() // the caller's cancel is here: the client marked the call cancelled
			return toolkit.NewError(toolkit.CodeOverloaded, "OverloadedError: the card network answered 429 after the charge was taken")
		}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.Fleet(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	go func() {
		<-entered
		if err := c.Cancel("charge-1"); err != nil {
			t.Error(err)
		}
	}()
	var r *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{ID: "charge-1", Name: "charge"}) {
		if ev.Final != nil {
			r = ev.Final
		}
	}
	if r == nil {
		t.Fatal("no final")
	}
	if r.Code != toolkit.CodeOverloaded || !strings.Contains(r.Text(), "after the charge was taken") || r.Metadata[wire.MetaToolRan] != true {
		t.Fatalf("final %s %q %v, want the tool's overloaded, tool_ran", r.Code, r.Text(), r.Metadata)
	}
}
