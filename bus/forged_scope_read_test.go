package bus_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestClientReadForgedScopedSessionRefused: Client.ActiveGroups and
// Client.SessionSchemas read a session's groups from the bucket
// themselves. An anonymous client asking for "\x00alice\x00s" was
// answered with alice's session "s" (its groups, its tools), where a
// call or a list of that name is refused; now it is refused too, with
// toolkit.ErrInvalidSession.
func TestClientReadForgedScopedSessionRefused(t *testing.T) {
	s := natstest.Embedded(t, false)
	state, err := bus.NewKVState(ctxT(t), natstest.JS(t, natstest.Connect(t, s)), nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	mustAdd(t, tk, echoTool())
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secrets."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("open_vault", "Open it.", func(ctx context.Context, _ struct{}) (string, error) { return "open", nil }), toolkit.InGroup("vault"))
	serve(t, natstest.Connect(t, s), tk, nil)
	alice := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Identity: "alice"})
	anon := newClient(t, natstest.Connect(t, s), nil)
	if r := alice.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"vault": true}}); r.Code != "" {
		t.Fatalf("alice's reset_tools: %+v", r)
	}
	natstest.WaitFor(t, "alice's groups to be read back", func() bool {
		active, err := alice.ActiveGroups(ctxT(t), "s", 0)
		return err == nil && len(active) == 1
	})
	for _, c := range []*bus.Client{anon, alice} {
		active, err := c.ActiveGroups(ctxT(t), "\x00alice\x00s", 0)
		if err == nil || !errors.Is(err, toolkit.ErrInvalidSession) || !strings.Contains(err.Error(), "NUL") {
			t.Errorf("ActiveGroups of a forged scoped session: %v, %v; want ErrInvalidSession naming the NUL", active, err)
		}
		schemas, err := c.SessionSchemas(ctxT(t), "\x00alice\x00s", 0)
		for _, sc := range schemas {
			if sc.Function.Name == "open_vault" {
				t.Errorf("SessionSchemas of a forged scoped session lists alice's active group's tool")
			}
		}
		if err == nil || !errors.Is(err, toolkit.ErrInvalidSession) {
			t.Errorf("SessionSchemas of a forged scoped session: %v; want ErrInvalidSession", err)
		}
	}
}
