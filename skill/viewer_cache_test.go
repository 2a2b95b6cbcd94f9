package skill_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
	"github.com/toolbus/toolbus/toolkit/middleware"
)

// The cache middleware does not answer the skill viewer: its answer
// depends on the session's active groups, so a skill a session saw
// would otherwise be shown to one that has not activated its group, or
// to the same session after it deactivated it.
func TestViewerNotCached(t *testing.T) {
	tk := toolkit.New(nil)
	tk.Use(middleware.Cache{PerSession: true}.Middleware())
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web."}); err != nil {
		t.Fatal(err)
	}
	set, _ := skill.NewSet(nil)
	if err := set.Add("web", skill.Static{{Name: "scrape", Description: "S.", Markdown: "# Scrape"}}); err != nil {
		t.Fatal(err)
	}
	if err := skill.Install(tk, set); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	view := func(session string) *toolkit.Response {
		return tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: skill.ViewerName, Session: session, Input: map[string]any{"skill": "scrape"}})
	}
	if r := view("b"); r.Code != toolkit.CodeToolError {
		t.Fatalf("b before: %s %q", r.Code, r.Text())
	}
	tk.Invoke(ctx, toolkit.ToolCall{ID: "r", Name: toolkit.MetaToolName, Session: "a", Input: map[string]any{"web": true}})
	if r := view("a"); r.Text() != "# Scrape" {
		t.Fatalf("a: %s %q", r.Code, r.Text())
	}
	if r := view("b"); r.Code != toolkit.CodeToolError {
		t.Errorf("session b, web inactive, after a viewed it: %s %q", r.Code, r.Text())
	}
	tk.Invoke(ctx, toolkit.ToolCall{ID: "r", Name: toolkit.MetaToolName, Session: "a", Input: map[string]any{"web": false}})
	if r := view("a"); r.Code != toolkit.CodeToolError {
		t.Errorf("session a after it deactivated web: %s %q", r.Code, r.Text())
	}
}
