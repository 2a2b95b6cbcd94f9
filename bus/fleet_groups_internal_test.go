package bus

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestFleetGroupsNotSpoiledByAnEndedCall: the worker's fleet view for
// reset_tools was started with the first call's ctx, so a call cancelled
// (or with a deadline shorter than the discover window) failed the start,
// and for a second after every other session's reset_tools naming
// another worker's group was refused ("Invalid group name(s): vault"),
// though nothing was wrong with it. The view starts on its own; a call
// whose ctx ends only stops waiting for it.
func TestFleetGroupsNotSpoiledByAnEndedCall(t *testing.T) {
	s := natstest.Server(t)
	tk := toolkit.New(nil)
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Vault tools."}); err != nil {
		t.Fatal(err)
	}
	mustAddT(t, tk, toolkit.Func("vault_tool", "A tool.", func(context.Context, struct{}) (string, error) { return "ok", nil }), toolkit.InGroup("vault"))
	serveKV(t, s, tk, &WorkerOptions{Instance: "vault"})

	g := &fleetGroups{nc: natstest.Conn(t, s), log: slog.New(slog.DiscardHandler)}
	t.Cleanup(g.close)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	g.groups(ended) // the caller gave up: nil or the groups, either will do
	got := g.groups(natstest.Ctx(t))
	if !slices.ContainsFunc(got, func(x toolkit.Group) bool { return x.Name == "vault" }) {
		t.Fatalf("after a call that ended, the next one got the fleet's groups %v, want vault among them", got)
	}
}

// TestFleetGroupsCallEndedDuringStart: a reset_tools call whose ctx
// ended while it waited for the worker's fleet view to start stopped
// waiting, but then judged its names without the fleet's groups and
// ended invalid_input ("Invalid group name(s): vault") rather than with
// its context's outcome: a caller that gave up was told its group does
// not exist, and a trace or log recorded a bad request. It ends
// interrupted, as any call whose ctx ended.
func TestFleetGroupsCallEndedDuringStart(t *testing.T) {
	s := natstest.Server(t)
	vault := toolkit.New(nil)
	if err := vault.AddGroup(toolkit.Group{Name: "vault", Description: "Vault tools."}); err != nil {
		t.Fatal(err)
	}
	mustAddT(t, vault, toolkit.Func("vault_tool", "A tool.", func(context.Context, struct{}) (string, error) { return "ok", nil }), toolkit.InGroup("vault"))
	serveKV(t, s, vault, &WorkerOptions{Instance: "vault"})

	g := &fleetGroups{nc: natstest.Conn(t, s), log: slog.New(slog.DiscardHandler)}
	t.Cleanup(g.close)
	starting := func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.starting != nil
	}
	web := toolkit.New(nil) // lacks vault
	if err := web.AddGroup(toolkit.Group{Name: "web", Description: "Web tools."}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(toolkit.WithFleetGroups(context.Background(), g.groups))
	defer cancel()
	got := make(chan *toolkit.Response, 1)
	go func() {
		got <- web.Invoke(ctx, toolkit.ToolCall{ID: "c1", Name: toolkit.MetaToolName, Input: map[string]any{"vault": true}})
	}()
	// The view's start waits one discover window (the vault worker
	// answers), so it is under way when the call is cancelled.
	natstest.WaitFor(t, "the fleet view's start", starting)
	cancel()
	var r *toolkit.Response
	select {
	case r = <-got:
	case <-natstest.Ctx(t).Done():
		t.Fatal("the cancelled call did not end")
	}
	if r.Code != toolkit.CodeInterrupted {
		t.Fatalf("a call cancelled while the fleet view started ended %s %s: %s, want interrupted", r.State, r.Code, r.Text())
	}
}
