package bus_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestResetToolsTakesTheFleetsGroups: in a mixed fleet (one worker
// serves web and vault, another only web), a session's reset_tools that
// the web-only worker took was refused for vault ("Invalid group
// name(s): vault"), though the fleet has it and the schema the model saw
// listed it: Client.ImportState and the model's call failed at random.
// A worker judges a name it lacks against the fleet's groups, and
// answers with the fleet's instructions for it.
func TestResetToolsTakesTheFleetsGroups(t *testing.T) {
	s := natstest.Embedded(t, false)
	worker := func(instance string, groups ...string) {
		nc := natstest.Connect(t, s)
		state, err := bus.NewKVState(ctxT(t), natstest.JS(t, nc), nil)
		if err != nil {
			t.Fatal(err)
		}
		tk := toolkit.New(&toolkit.Options{State: state})
		for _, g := range groups {
			if err := tk.AddGroup(toolkit.Group{Name: g, Description: g + " tools.", Instructions: "Use " + g + " with care."}); err != nil {
				t.Fatal(err)
			}
			mustAdd(t, tk, toolkit.Func(g+"_tool", "A tool.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }), toolkit.InGroup(g))
		}
		serve(t, nc, tk, &bus.WorkerOptions{Instance: instance})
	}
	worker("both", "web", "vault")
	worker("web-only", "web")
	c := newClient(t, natstest.Connect(t, s), nil)
	f, err := c.Fleet(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "both workers in the fleet", func() bool { return len(f.Instances()) == 2 })

	// Until the web-only worker has answered each (the queue group picks
	// one at random; 0.5^200 that it never does).
	untilWebOnly := func(what string, in map[string]any, check func(r *toolkit.Response)) {
		t.Helper()
		for i := 0; i < 200; i++ {
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: "s", Input: in})
			check(r)
			if r.Metadata[wire.MetaWorker] == "web-only" {
				return
			}
		}
		t.Fatalf("%s: the web-only worker answered none of 200 calls", what)
	}
	untilWebOnly("web and vault", map[string]any{"web": true, "vault": true}, func(r *toolkit.Response) {
		t.Helper()
		if r.State != toolkit.StateSuccess {
			t.Fatalf("worker %v: %s %s: %s", r.Metadata[wire.MetaWorker], r.State, r.Code, r.Text())
		}
		if got := r.Metadata[toolkit.MetaActiveGroups]; !slices.Equal(toStrings(got), []string{"web", "vault"}) {
			t.Fatalf("worker %v: active groups %v, want [web vault]", r.Metadata[wire.MetaWorker], got)
		}
		if !strings.Contains(r.Text(), `<group name="vault">Use vault with care.</group>`) {
			t.Fatalf("worker %v: the answer lacks vault's instructions:\n%s", r.Metadata[wire.MetaWorker], r.Text())
		}
	})
	st, err := c.ExportState(ctxT(t), "s")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.ActiveGroups, []string{"web", "vault"}) {
		t.Fatalf("exported %v, want [web vault]", st.ActiveGroups)
	}
	untilWebOnly("a group nobody has", map[string]any{"web": true, "nope": true}, func(r *toolkit.Response) {
		t.Helper()
		if r.Code != toolkit.CodeInvalidInput || !strings.Contains(r.Text(), "Invalid group name(s): nope. The current available groups are: web, vault") {
			t.Fatalf("worker %v: %s %s: %s", r.Metadata[wire.MetaWorker], r.State, r.Code, r.Text())
		}
	})
	// Nothing changed, and a session with vault active still calls web
	// on either worker.
	if st, err = c.ExportState(ctxT(t), "s"); err != nil || !slices.Equal(st.ActiveGroups, []string{"web", "vault"}) {
		t.Fatalf("after the refused call: %v %v, want [web vault]", st.ActiveGroups, err)
	}
	for i := 0; i < 20; i++ {
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "web_tool", Session: "s", Input: map[string]any{}}); r.State != toolkit.StateSuccess {
			t.Fatalf("web_tool on %v: %s %s: %s", r.Metadata[wire.MetaWorker], r.State, r.Code, r.Text())
		}
	}
}

func toStrings(v any) []string {
	switch v := v.(type) {
	case []string:
		return v
	case []any:
		out := make([]string, len(v))
		for i, x := range v {
			out[i], _ = x.(string)
		}
		return out
	}
	return nil
}
