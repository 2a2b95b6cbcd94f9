package toolkit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A tool renamed away from a name at MaxNameLen gets a name a tool may
// have (the bus refuses to call longer ones), still callable, and its
// OriginalName is the name it was given.
func TestRenameAtNameLimit(t *testing.T) {
	for _, n := range []int{toolkit.MaxNameLen - 6, toolkit.MaxNameLen - 5, toolkit.MaxNameLen} {
		tk := newToolkit(t, nil)
		name := strings.Repeat("a", n)
		mustAdd(t, tk, writes(name, nil, toolkit.Text("first")))
		mustAdd(t, tk, writes(name, nil, toolkit.Text("second")), toolkit.OnConflict(toolkit.ConflictRename))
		tools := tk.Tools()
		if len(tools) != 2 {
			t.Fatalf("%d tools, want 2", len(tools))
		}
		renamed := tools[1]
		if !toolkit.ValidToolName(renamed.Name) {
			t.Errorf("name of %d bytes renamed to one of %d bytes, not a ValidToolName", n, len(renamed.Name))
		}
		if renamed.OriginalName() != name {
			t.Errorf("OriginalName has %d bytes, want the %d given", len(renamed.OriginalName()), n)
		}
		if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: renamed.Name}); r.Text() != "second" {
			t.Errorf("the renamed tool answered %s %q", r.Code, r.Text())
		}
	}
}
