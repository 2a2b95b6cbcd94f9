package bus_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestKVStateLongSessionIsInvalidInput: a call names a session too long
// to be a key of the group-state bucket. Reading or storing its groups
// failed with code unavailable ("could not read the active tool
// groups"), which reads as a store outage and which callers retry; no
// retry helps: invalid_input, as the permission check already answers.
func TestKVStateLongSessionIsInvalidInput(t *testing.T) {
	s := natstest.Embedded(t, false)
	state, err := bus.NewKVState(ctxT(t), natstest.JS(t, natstest.Connect(t, s)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("secret", "Secret.", func(context.Context, struct{}) (string, error) { return "s3cret", nil }), toolkit.InGroup("vault"))
	long := strings.Repeat("s", 2000)
	for _, call := range []toolkit.ToolCall{
		{ID: "use", Name: "secret", Session: long},
		{ID: "on", Name: toolkit.MetaToolName, Session: long, Input: map[string]any{"vault": true}},
	} {
		r := tk.Invoke(ctxT(t), call)
		if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "session") {
			t.Errorf("%s of a session too long to key: %s %s %q", call.Name, r.State, r.Code, r.Text())
		}
	}
}
