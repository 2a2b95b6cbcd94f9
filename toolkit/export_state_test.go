package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// ExportState gives what ImportState takes back, after a group the
// session had activated was removed (AgentScope 1.x's state_dict lists
// only the groups the toolkit has).
func TestExportStateAfterRemoveGroup(t *testing.T) {
	tk := newToolkit(t, nil)
	ctx := context.Background()
	mustAddGroup(t, tk, toolkit.Group{Name: "g1", Description: "G1."})
	mustAddGroup(t, tk, toolkit.Group{Name: "g2", Description: "G2."})
	if _, err := tk.ImportState(ctx, "s", toolkit.SessionState{ActiveGroups: []string{"g1", "g2"}}); err != nil {
		t.Fatal(err)
	}
	if err := tk.RemoveGroup("g2"); err != nil {
		t.Fatal(err)
	}
	st, err := tk.ExportState(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	jsonEqual(t, "exported", st, toolkit.SessionState{ActiveGroups: []string{"g1"}})
	if _, err := tk.ImportState(ctx, "s2", st); err != nil {
		t.Errorf("importing the exported state: %v", err)
	}
}

// ExportState listed a session's groups in the order they were stored,
// which is the group order of whichever toolkit stored them: two
// toolkits sharing one GroupState with their groups in other orders
// (workers configured apart) exported one state in two orders, and not
// in the exporting toolkit's. AgentScope 1.x's state_dict lists the
// active groups in the toolkit's group order, whatever order they were
// activated in; ExportState does too.
func TestExportStateInGroupOrder(t *testing.T) {
	ctx := context.Background()
	state := toolkit.NewMemoryState()
	tk1 := newToolkit(t, &toolkit.Options{State: state})
	tk2 := newToolkit(t, &toolkit.Options{State: state})
	for _, g := range []string{"a", "b", "c"} {
		mustAddGroup(t, tk1, toolkit.Group{Name: g, Description: g + " tools."})
	}
	for _, g := range []string{"c", "b", "a"} {
		mustAddGroup(t, tk2, toolkit.Group{Name: g, Description: g + " tools."})
	}
	// Activated in the order c, a: listed in group order.
	if r := tk1.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: toolkit.MetaToolName, Session: "s", RawInput: `{"c": true, "a": true}`}); r.State != toolkit.StateSuccess {
		t.Fatalf("reset_tools: %s %s", r.State, r.Text())
	}
	for _, tt := range []struct {
		name string
		tk   *toolkit.Toolkit
		want []string
	}{{"tk1", tk1, []string{"a", "c"}}, {"tk2", tk2, []string{"c", "a"}}} {
		st, err := tt.tk.ExportState(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, tt.name+" exported", st, toolkit.SessionState{ActiveGroups: tt.want})
		// Loaded back (in any order), it exports the same.
		if _, err := tt.tk.ImportState(ctx, "s2", toolkit.SessionState{ActiveGroups: []string{tt.want[1], tt.want[0]}}); err != nil {
			t.Fatal(err)
		}
		if st, err = tt.tk.ExportState(ctx, "s2"); err != nil {
			t.Fatal(err)
		}
		jsonEqual(t, tt.name+" exported after import", st, toolkit.SessionState{ActiveGroups: tt.want})
	}
}
