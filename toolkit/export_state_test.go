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
