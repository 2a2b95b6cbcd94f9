package bus_test

import (
	"context"
	"slices"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestExportStateLeavesOutGroupsTheFleetLost: a session activated a
// group that only a worker since gone served. Client.ExportState gave
// the stored groups as they were, that one included, so ImportState of
// its own export was refused (reset_tools rejects a group the fleet
// does not have): the state could not be taken back. As
// toolkit.ExportState does with a group removed since, the export
// leaves out the groups the fleet does not have, and imports again.
func TestExportStateLeavesOutGroupsTheFleetLost(t *testing.T) {
	s := natstest.Embedded(t, false)
	worker := func(instance string, groups ...string) *bus.Worker {
		nc := natstest.Connect(t, s)
		state, err := bus.NewKVState(ctxT(t), natstest.JS(t, nc), nil)
		if err != nil {
			t.Fatal(err)
		}
		tk := toolkit.New(&toolkit.Options{State: state})
		for _, g := range groups {
			if err := tk.AddGroup(toolkit.Group{Name: g, Description: g + " tools."}); err != nil {
				t.Fatal(err)
			}
			mustAdd(t, tk, toolkit.Func(g+"_tool", "A tool.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }), toolkit.InGroup(g))
		}
		return serve(t, nc, tk, &bus.WorkerOptions{Instance: instance})
	}
	both := worker("both", "web", "vault")
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.ImportState(ctxT(t), "s", toolkit.SessionState{ActiveGroups: []string{"web", "vault"}}); err != nil {
		t.Fatal(err)
	}
	worker("web-only", "web")
	if err := both.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	f, err := c.Fleet(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the fleet without vault", func() bool {
		return !slices.ContainsFunc(f.Groups(), func(g toolkit.Group) bool { return g.Name == "vault" })
	})
	st, err := c.ExportState(ctxT(t), "s")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.ActiveGroups, []string{"web"}) {
		t.Fatalf("exported %v, want [web]: the fleet has no vault group", st.ActiveGroups)
	}
	if _, err := c.ImportState(ctxT(t), "s", st); err != nil {
		t.Fatalf("importing the export: %v", err)
	}
}

// TestExportStateInFleetGroupOrder: Client.ExportState listed a
// session's groups in the order the worker that stored them had its
// groups, not in the fleet's group order (Fleet.Groups, which
// reset_tools' schema lists), so the same state exported in another
// order once another worker led the fleet. As toolkit.ExportState (and
// AgentScope 1.x's state_dict), it lists them in the group order of
// what it exports from: the fleet.
func TestExportStateInFleetGroupOrder(t *testing.T) {
	s := natstest.Embedded(t, false)
	worker := func(instance string, groups ...string) {
		nc := natstest.Connect(t, s)
		state, err := bus.NewKVState(ctxT(t), natstest.JS(t, nc), nil)
		if err != nil {
			t.Fatal(err)
		}
		tk := toolkit.New(&toolkit.Options{State: state})
		for _, g := range groups {
			if err := tk.AddGroup(toolkit.Group{Name: g, Description: g + " tools."}); err != nil {
				t.Fatal(err)
			}
			mustAdd(t, tk, toolkit.Func(g+"_tool", "A tool.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }), toolkit.InGroup(g))
		}
		serve(t, nc, tk, &bus.WorkerOptions{Instance: instance})
	}
	worker("b", "web", "vault")
	c := newClient(t, natstest.Connect(t, s), nil)
	if _, err := c.ImportState(ctxT(t), "s", toolkit.SessionState{ActiveGroups: []string{"vault", "web"}}); err != nil {
		t.Fatal(err)
	}
	worker("a", "vault", "web") // first by id: the fleet's groups are now in its order
	f, err := c.Fleet(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the fleet in a's group order", func() bool {
		return len(f.Instances()) == 2
	})
	if g := f.Groups(); len(g) != 2 || g[0].Name != "vault" {
		t.Fatalf("fleet groups %v, want vault first", g)
	}
	st, err := c.ExportState(ctxT(t), "s")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.ActiveGroups, []string{"vault", "web"}) {
		t.Fatalf("exported %v, want [vault web]: the fleet's group order", st.ActiveGroups)
	}
}
