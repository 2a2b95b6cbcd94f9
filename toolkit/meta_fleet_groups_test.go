package toolkit_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestResetToolsFleetGroups: a toolkit serving in a fleet (its transport
// dispatches with WithFleetGroups) takes a group name it lacks when the fleet
// has it, answers with that group's instructions and stores it; a name
// the fleet lacks too is refused, listing the fleet's groups, and
// changes nothing. The fleet is asked only when a name is not the
// toolkit's own.
func TestResetToolsFleetGroups(t *testing.T) {
	state := toolkit.NewMemoryState()
	tk := newToolkit(t, &toolkit.Options{State: state})
	mustAddGroup(t, tk, toolkit.Group{Name: "web", Description: "Web tools.", Instructions: "Cite the page."})
	mustAdd(t, tk, toolkit.Func("fetch", "Fetch.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }), toolkit.InGroup("web"))
	asked := 0
	fleet := func(context.Context) []toolkit.Group {
		asked++
		return []toolkit.Group{
			{Name: "vault", Description: "Vault tools.", Instructions: "Never print a secret."},
			{Name: "web", Description: "Web tools (another worker's words)."},
		}
	}
	reset := func(in map[string]any) result {
		return collect(t, tk, toolkit.WithFleetGroups(context.Background(), fleet), toolkit.ToolCall{ID: "r", Name: toolkit.MetaToolName, Session: "s", Input: in})
	}

	r := reset(map[string]any{"web": true})
	if r.final.State != toolkit.StateSuccess || asked != 0 {
		t.Fatalf("own group: %s %s (fleet asked %d times, want 0)", r.final.State, r.final.Text(), asked)
	}

	r = reset(map[string]any{"vault": true, "web": true})
	if r.final.State != toolkit.StateSuccess {
		t.Fatalf("a group of the fleet's: %s %s: %s", r.final.State, r.final.Code, r.final.Text())
	}
	want := "The currently activated tool group(s): web, vault.\n<tool-instructions>\n" +
		"The tool instructions are a collection of suggestions, rules and notifications about how to use the tools in the activated groups.\n" +
		`<group name="web">Cite the page.</group><group name="vault">Never print a secret.</group>` + "\n</tool-instructions>"
	if got := r.final.Text(); got != want {
		t.Fatalf("answer:\n%s\nwant:\n%s", got, want)
	}
	active, _, _, _ := state.Load(context.Background(), "s", 0)
	if !slices.Equal(active, []string{"web", "vault"}) {
		t.Fatalf("stored %v, want [web vault]", active)
	}
	// vault active here, where none of its tools are: the toolkit's own
	// tools are listed and called as before.
	if r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "f", Name: "fetch", Session: "s"}); r.final.State != toolkit.StateSuccess {
		t.Fatalf("fetch with vault active: %s %s", r.final.State, r.final.Text())
	}

	r = reset(map[string]any{"nope": true, "vault": true})
	if r.final.Code != toolkit.CodeInvalidInput || !strings.Contains(r.final.Text(), "Invalid group name(s): nope. The current available groups are: web, vault") {
		t.Fatalf("a group nobody has: %s %s: %s", r.final.State, r.final.Code, r.final.Text())
	}
	r = reset(map[string]any{"vault": "yes"})
	if r.final.Code != toolkit.CodeInvalidInput || !strings.Contains(r.final.Text(), "the argument 'vault' should be a bool value") {
		t.Fatalf("a fleet group not a bool: %s %s: %s", r.final.State, r.final.Code, r.final.Text())
	}
	if active, _, _, _ := state.Load(context.Background(), "s", 0); !slices.Equal(active, []string{"web", "vault"}) {
		t.Fatalf("after refused calls: stored %v, want [web vault]", active)
	}

	// Without WithFleetGroups (in process), only the toolkit's own groups.
	r = collect(t, tk, context.Background(), toolkit.ToolCall{ID: "r", Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"vault": true}})
	if r.final.Code != toolkit.CodeInvalidInput || !strings.Contains(r.final.Text(), "The current available groups are: web") {
		t.Fatalf("no fleet: %s %s: %s", r.final.State, r.final.Code, r.final.Text())
	}
}
