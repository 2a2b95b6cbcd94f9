package bus_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionsListsPastABadGroupsValue: a session whose stored groups are
// not the session's groups (written by hand, `nats kv put`) is listed with the
// error; the other sessions are listed as usual. One bad value made the
// whole listing (toolctl sessions) fail.
func TestSessionsListsPastABadGroupsValue(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	state, err := bus.NewKVState(ctxT(t), js, nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web tools."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("touch", "Keep state here.", func(context.Context, struct{}) (string, error) { return "ok", nil }), toolkit.SessionBound())
	w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w1", Sessions: &bus.SessionsOptions{JetStream: js}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(ctxT(t)) })

	c := newClient(t, natstest.Connect(t, s), nil)
	for _, session := range []string{"good", "bad"} {
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session, Input: map[string]any{"web": true}}); r.State != toolkit.StateSuccess {
			t.Fatalf("reset_tools %s: %+v", session, r)
		}
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "touch", Session: session}); r.Text() != "ok" {
			t.Fatalf("touch %s: %+v", session, r)
		}
	}
	b, err := js.KeyValue(ctxT(t), wire.BucketGroups)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.PutString(ctxT(t), "bad", "not json"); err != nil {
		t.Fatal(err)
	}

	pins, err := c.Sessions(ctxT(t))
	if err != nil {
		t.Fatalf("one bad value failed the listing: %v", err)
	}
	got := map[string]bus.SessionPin{}
	for _, p := range pins {
		got[p.Session] = p
	}
	if len(pins) != 2 || got["good"].Worker != "w1" || got["bad"].Worker != "w1" {
		t.Fatalf("sessions: %+v", pins)
	}
	if g := got["good"]; len(g.Groups) != 1 || g.Groups[0] != "web" || g.GroupsErr != nil {
		t.Fatalf("good session: %+v", g)
	}
	if g := got["bad"]; g.Groups != nil || g.GroupsErr == nil {
		t.Fatalf("bad session: %+v", g)
	}
}
