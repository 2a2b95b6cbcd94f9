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
