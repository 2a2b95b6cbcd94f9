package skill

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolbus/toolbus/toolkit"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// viewerKit is a toolkit with a "repair" group, skills in basic and in
// repair, and the viewer installed.
func viewerKit(t *testing.T) (*toolkit.Toolkit, *Set) {
	t.Helper()
	tk := toolkit.New(nil)
	if err := tk.AddGroup(toolkit.Group{Name: "repair", Description: "Repair tools."}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeSkill(t, filepath.Join(dir, "basic"), skillDoc("basic_skill", "A basic skill", "# Basic\nDo basic things."))
	writeSkill(t, filepath.Join(dir, "repair"), skillDoc("repair_skill", "A repair skill", "# Repair\nFix things."))
	s := newSet(t, nil)
	if _, err := s.AddDir("", filepath.Join(dir, "basic"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddDir("repair", filepath.Join(dir, "repair"), nil); err != nil {
		t.Fatal(err)
	}
	if err := Install(tk, s); err != nil {
		t.Fatal(err)
	}
	return tk, s
}

func TestViewerSchema(t *testing.T) {
	tk, _ := viewerKit(t)
	fs, ok := tk.Schema(ViewerName)
	if !ok {
		t.Fatal("Skill tool not registered")
	}
	got, _ := json.Marshal(fs.Function.Parameters)
	want := `{"properties":{"skill":{"description":"The exact name of the skill to view. ","type":"string"}},"required":["skill"],"type":"object"}`
	if string(got) != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	if fs.Function.Description != ViewerDescription {
		t.Fatalf("description %q", fs.Function.Description)
	}
	tool, _ := tk.Get(ViewerName)
	if !tool.ReadOnly() || !tool.ConcurrencySafe() || tool.Group() != toolkit.BasicGroup {
		t.Fatalf("flags: %+v", tool)
	}
	listed := false
	for _, s := range tk.Schemas(nil) {
		listed = listed || s.Function.Name == ViewerName
	}
	if !listed {
		t.Fatal("Skill tool missing from the listing")
	}
}

func TestViewerCalls(t *testing.T) {
	tk, set := viewerKit(t)
	ctx := context.Background()
	call := func(session, name string) *toolkit.Response {
		return tk.Invoke(ctx, toolkit.ToolCall{ID: "c-" + name, Name: ViewerName, Session: session, Input: map[string]any{"skill": name}})
	}

	tests := []struct {
		name, session, skill string
		state                toolkit.State
		code                 toolkit.Code
		text                 string
	}{
		{"found", "s1", "basic_skill", toolkit.StateSuccess, "", "# Basic\nDo basic things."},
		{"not found", "s1", "nope", toolkit.StateError, toolkit.CodeToolError, "SkillNotFoundError: Skill 'nope' not found."},
		{"inactive group", "s1", "repair_skill", toolkit.StateError, toolkit.CodeToolError, "SkillNotFoundError: Skill 'repair_skill' not found."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := call(tt.session, tt.skill)
			if r.State != tt.state || r.Code != tt.code || r.Text() != tt.text || r.ID != "c-"+tt.skill {
				t.Fatalf("got %s %s %q", r.State, r.Code, r.Text())
			}
		})
	}

	// Port of test_skill_viewer_uses_active_tool_group_skills: after the
	// session activates "repair", the viewer finds the group's skill, and
	// only for that session.
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "m", Name: toolkit.MetaToolName, Session: "s2", Input: map[string]any{"repair": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("reset_tools: %s %s", r.State, r.Text())
	}
	if r := call("s2", "repair_skill"); r.State != toolkit.StateSuccess || r.Text() != "# Repair\nFix things." {
		t.Fatalf("after activation: %s %q", r.State, r.Text())
	}
	if r := call("s1", "repair_skill"); r.State != toolkit.StateError {
		t.Fatalf("other session sees the group skill: %s", r.State)
	}
	// A caller identity's session is its own: the viewer reads the groups
	// of alice's s3, not those of an anonymous s3.
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "m", Name: toolkit.MetaToolName, Identity: "alice", Session: "s3", Input: map[string]any{"repair": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("reset_tools as alice: %s %s", r.State, r.Text())
	}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "a", Name: ViewerName, Identity: "alice", Session: "s3", Input: map[string]any{"skill": "repair_skill"}}); r.State != toolkit.StateSuccess {
		t.Fatalf("alice's s3 after activation: %s %q", r.State, r.Text())
	}
	if r := call("s3", "repair_skill"); r.State != toolkit.StateError {
		t.Fatalf("the anonymous s3 sees alice's group skill: %s", r.State)
	}
	instr, err := Instructions(ctx, tk, set, "s2", 0)
	if err != nil || !strings.Contains(instr, "<name>repair_skill</name>") {
		t.Fatalf("instructions for s2: %v\n%s", err, instr)
	}

	// Bad input never reaches the viewer.
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "x", Name: ViewerName, Input: map[string]any{"skill": 3}}); r.Code != toolkit.CodeInvalidInput {
		t.Fatalf("non-string skill: %s %q", r.Code, r.Text())
	}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "x", Name: ViewerName}); r.Code != toolkit.CodeInvalidInput {
		t.Fatalf("missing skill: %s %q", r.Code, r.Text())
	}
}

func TestInstallErrors(t *testing.T) {
	tk := toolkit.New(nil)
	s := newSet(t, nil)
	mustAdd(t, s, "ghost", Static{sk("a", "b", "/c")})
	if err := Install(tk, s); err == nil || !strings.Contains(err.Error(), `"ghost"`) {
		t.Fatalf("unknown group: %v", err)
	}
	if _, ok := tk.Get(ViewerName); ok {
		t.Fatal("a failed Install registered the viewer")
	}
	s2 := newSet(t, nil)
	if err := Install(tk, s2); err != nil {
		t.Fatal(err)
	}
	if err := Install(tk, s2); err == nil {
		t.Fatal("second Install accepted")
	}
	if err := Install(nil, s2); err == nil {
		t.Fatal("nil toolkit accepted")
	}
}

// Install binds the set to the toolkit's group order.
func TestInstallGroupOrder(t *testing.T) {
	tk := toolkit.New(nil)
	for _, g := range []string{"first", "second"} {
		if err := tk.AddGroup(toolkit.Group{Name: g, Description: g}); err != nil {
			t.Fatal(err)
		}
	}
	s := newSet(t, nil)
	mustAdd(t, s, "second", Static{sk("two", "d", "/2")})
	mustAdd(t, s, "first", Static{sk("one", "d", "/1")})
	if got := strings.Join(names(s.Available([]string{"first", "second"})), ","); got != "two,one" {
		t.Fatalf("before Install: %s", got)
	}
	if err := Install(tk, s); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(s.Available([]string{"first", "second"})), ","); got != "one,two" {
		t.Fatalf("after Install: %s", got)
	}
}

// TestViewerSpan: with traces on (a global provider), viewing a skill
// records "skill.load <name>" as a child of the call's span.
func TestViewerSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	tk, _ := viewerKit(t)
	ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool Skill")
	r := tk.Invoke(ctx, toolkit.ToolCall{ID: "v1", Name: ViewerName, Input: map[string]any{"skill": "basic_skill"}})
	parent.End()
	if r.State != toolkit.StateSuccess {
		t.Fatalf("view: %+v", r)
	}
	for _, sp := range rec.Ended() {
		if sp.Name() == "skill.load basic_skill" {
			if sp.Parent().SpanID() != parent.SpanContext().SpanID() {
				t.Fatalf("skill.load's parent %v, want the call's %v", sp.Parent().SpanID(), parent.SpanContext().SpanID())
			}
			return
		}
	}
	t.Fatalf("no skill.load span among %d", len(rec.Ended()))
}

// The Skill tool is listed while a skill of basic or of an active group
// exists, as AgentScope 2.x's _get_available_tools lists it; its skills
// are read again for every listing. A call while it is unlisted still runs
// it.
func TestViewerListedWhileSkillVisible(t *testing.T) {
	tk := toolkit.New(nil)
	if err := tk.AddGroup(toolkit.Group{Name: "repair", Description: "Repair tools."}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := newSet(t, nil)
	if _, err := s.AddDir("", filepath.Join(dir, "basic"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddDir("repair", filepath.Join(dir, "repair"), nil); err != nil {
		t.Fatal(err)
	}
	if err := Install(tk, s); err != nil {
		t.Fatal(err)
	}
	names := func(active []string) []string {
		var out []string
		for _, fs := range tk.Schemas(active) {
			out = append(out, fs.Function.Name)
		}
		return out
	}
	steps := []struct {
		name   string
		write  string // a group's skill directory to write a SKILL.md into
		active []string
		want   []string
	}{
		{"no skill", "", []string{"repair"}, []string{toolkit.MetaToolName}},
		{"a skill of an inactive group", "repair", nil, []string{toolkit.MetaToolName}},
		{"the group active", "", []string{"repair"}, []string{ViewerName, toolkit.MetaToolName}},
		{"a basic skill", "basic", nil, []string{ViewerName, toolkit.MetaToolName}},
	}
	for _, st := range steps {
		if st.write != "" {
			writeSkill(t, filepath.Join(dir, st.write), skillDoc(st.write+"_skill", "A skill.", "# Body"))
		}
		if got := names(st.active); !slices.Equal(got, st.want) {
			t.Errorf("%s: listed %v, want %v", st.name, got, st.want)
		}
	}
	if got := s.GroupsWithSkills(); !slices.Equal(got, []string{toolkit.BasicGroup, "repair"}) {
		t.Errorf("GroupsWithSkills() = %v", got)
	}

	// Unlisted for this session, and still answering.
	if !s.Remove("basic_skill") {
		t.Fatal("basic_skill not removed")
	}
	if got := names(nil); slices.Contains(got, ViewerName) {
		t.Fatalf("listed with no visible skill: %v", got)
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "v", Name: ViewerName, Input: map[string]any{"skill": "repair_skill"}})
	if r.Code != toolkit.CodeToolError || r.Text() != "SkillNotFoundError: Skill 'repair_skill' not found." {
		t.Fatalf("unlisted viewer: %s %q", r.Code, r.Text())
	}
}
