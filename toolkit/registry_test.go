package toolkit_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

func TestAddRejectsBadDefinitions(t *testing.T) {
	okSchema := objectSchema(map[string]any{"a": map[string]any{"type": "string"}})
	raw := func(name string, schema map[string]any) *toolkit.Tool {
		return toolkit.Raw(name, "D.", schema, nopHandler)
	}
	noHandler := toolkit.Raw("nohandler", "D.", okSchema, nil)
	tests := []struct {
		name    string
		setup   func(tk *toolkit.Toolkit)
		tool    *toolkit.Tool
		opts    []toolkit.Option
		want    string
		invalid bool // the error wraps ErrInvalidOption
	}{
		{name: "nil tool", tool: nil, want: "nil tool"},
		{name: "empty name", tool: raw("", okSchema), want: "invalid tool name"},
		{name: "dot (subject separator)", tool: raw("a.b", okSchema), want: "invalid tool name"},
		{name: "space", tool: raw("a b", okSchema), want: "invalid tool name"},
		{name: "wildcard *", tool: raw("a*", okSchema), want: "invalid tool name"},
		{name: "wildcard >", tool: raw(">", okSchema), want: "invalid tool name"},
		{name: "non-ASCII", tool: raw("café", okSchema), want: "invalid tool name"},
		{name: "name over MaxNameLen", tool: raw(strings.Repeat("n", toolkit.MaxNameLen+1), okSchema), want: "over the 255 a tool name may be"},
		{name: "reserved meta tool name", tool: raw(toolkit.MetaToolName, okSchema), want: "reserved"},
		{name: "no handler", tool: noHandler, want: "has no handler"},
		{name: "schema type not object", tool: raw("t", map[string]any{"type": "string", "properties": map[string]any{}}), want: `"type" must be "object"`},
		{name: "schema without type", tool: raw("t", map[string]any{"properties": map[string]any{}}), want: `"type" must be "object"`},
		{name: "properties not an object", tool: raw("t", map[string]any{"type": "object", "properties": []any{}}), want: `"properties" must be an object`},
		{name: "schema nested too deep", tool: raw("t", deepSchema(toolkit.MaxSchemaDepth)), want: "nested deeper than 48 levels"},
		{name: "schema containing itself", tool: raw("t", selfSchema()), want: "contains itself"},
		{name: "schema whose shared parts write out too big", tool: raw("t", sharedSchema(20, 4)), want: "values written out"},
		{name: "properties missing", tool: raw("t", map[string]any{"type": "object"}), want: `"properties" must be an object`},
		{name: "schema that does not compile", tool: raw("t", objectSchema(map[string]any{"a": map[string]any{"type": 5}})), want: "invalid input schema"},
		{name: "bad $ref", tool: raw("t", objectSchema(map[string]any{"a": map[string]any{"$ref": "#/$defs/missing"}})), want: "invalid input schema"},
		{name: "typed input not a struct", tool: toolkit.Func("t", "D.", func(ctx context.Context, in int) (string, error) { return "", nil }), want: "is not a struct"},
		{name: "typed input with an invalid Go type", tool: toolkit.Func("t", "D.", func(ctx context.Context, in struct{ C chan int }) (string, error) { return "", nil }), want: "inferring the schema"},
		{name: "bad enum tag", tool: toolkit.Func("t", "D.", func(ctx context.Context, in struct {
			N int `json:"n" enum:"1,x"`
		}) (string, error) {
			return "", nil
		}), want: "enum tag"},
		{name: "bad minimum tag", tool: toolkit.Func("t", "D.", func(ctx context.Context, in struct {
			N int `json:"n" minimum:"low"`
		}) (string, error) {
			return "", nil
		}), want: "minimum tag"},
		{name: "unknown group", tool: raw("t", okSchema), opts: []toolkit.Option{toolkit.InGroup("nope")}, want: `group "nope" not found`},
		{name: "empty group option", tool: raw("t", okSchema), opts: []toolkit.Option{toolkit.InGroup("")}, want: "empty group name", invalid: true},
		{name: "preset that is not a property", tool: raw("t", okSchema), opts: []toolkit.Option{toolkit.WithPresets(map[string]any{"zzz": 1})}, want: `preset "zzz" is not a property`},
		{name: "empty presets", tool: raw("t", okSchema), opts: []toolkit.Option{toolkit.WithPresets(nil)}, want: "empty presets", invalid: true},
		{name: "ListedWith without a function", tool: raw("t", okSchema), opts: []toolkit.Option{toolkit.ListedWith(nil)}, want: "ListedWith needs a function", invalid: true},
		{name: "bad idempotency level", tool: raw("t", okSchema), opts: []toolkit.Option{toolkit.WithIdempotency(7)}, want: "idempotency level", invalid: true},
		{name: "bad conflict strategy", tool: raw("t", okSchema), opts: []toolkit.Option{toolkit.OnConflict(9)}, want: "conflict strategy", invalid: true},
		{name: "nil middleware", tool: raw("t", okSchema), opts: []toolkit.Option{toolkit.WithMiddleware(nil)}, want: "nil middleware", invalid: true},
		{name: "nil option", tool: raw("t", okSchema), opts: []toolkit.Option{nil}, want: "nil option", invalid: true},
		{
			name:  "name taken",
			setup: func(tk *toolkit.Toolkit) { _ = tk.Add(raw("t", okSchema)) },
			tool:  raw("t", okSchema), want: "already registered",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newToolkit(t, nil)
			if tt.setup != nil {
				tt.setup(tk)
			}
			before := schemaNames(tk.Schemas(nil))
			err := tk.Add(tt.tool, tt.opts...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Add = %v, want an error containing %q", err, tt.want)
			}
			if errors.Is(err, toolkit.ErrInvalidOption) != tt.invalid {
				t.Errorf("errors.Is(err, ErrInvalidOption) = %v, want %v", !tt.invalid, tt.invalid)
			}
			// The package names itself once ("toolkit: tool "t": toolkit:
			// invalid option: ..." said it twice).
			if n := strings.Count(err.Error(), "toolkit:"); n != 1 {
				t.Errorf("Add = %q, which says \"toolkit:\" %d times, want once", err, n)
			}
			if after := schemaNames(tk.Schemas(nil)); !slices.Equal(before, after) {
				t.Errorf("a failed Add changed the registry: %v → %v", before, after)
			}
		})
	}
}

func TestValidNames(t *testing.T) {
	for _, name := range []string{"a", "A_b-9", "mcp__fs__read_file", "x-y"} {
		if !toolkit.ValidName(name) {
			t.Errorf("ValidName(%q) = false", name)
		}
	}
	for _, name := range []string{"", "a.b", "a b", "*", ">", "a\tb", "é", "a/b"} {
		if toolkit.ValidName(name) {
			t.Errorf("ValidName(%q) = true", name)
		}
	}
}

func TestGroups(t *testing.T) {
	bad := []struct {
		name string
		g    toolkit.Group
		want string
	}{
		{"basic is implicit", toolkit.Group{Name: "basic", Description: "d"}, "implicit"},
		{"invalid name", toolkit.Group{Name: "a.b", Description: "d"}, "invalid group name"},
		{"empty name", toolkit.Group{Name: "", Description: "d"}, "invalid group name"},
		{"no description", toolkit.Group{Name: "g"}, "needs a description"},
		{"duplicate", toolkit.Group{Name: "web", Description: "again"}, "already exists"},
	}
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "web", Description: "Web tools."})
	for _, b := range bad {
		if err := tk.AddGroup(b.g); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: AddGroup = %v, want %q", b.name, err, b.want)
		}
	}
	if got := tk.Groups(); len(got) != 1 || got[0].Name != "web" {
		t.Errorf("Groups = %+v", got)
	}
	if err := tk.RemoveGroup("basic"); err == nil {
		t.Error("RemoveGroup(basic) succeeded")
	}
	if err := tk.RemoveGroup("nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("RemoveGroup(nope) = %v", err)
	}
	// A name no group can have (over MaxNameLen) is not quoted whole:
	// removing or importing a megabyte name made a megabyte error.
	long := strings.Repeat("g", 1<<20)
	if err := tk.RemoveGroup(long); err == nil || !strings.Contains(err.Error(), "not found") || len(err.Error()) > 200 {
		t.Errorf("RemoveGroup(a 1 MiB name) = %.300v (%d bytes), want not found within 200 bytes", err, len(fmt.Sprint(err)))
	}
	if _, err := tk.ImportState(context.Background(), "s", toolkit.SessionState{ActiveGroups: []string{long}}); err == nil || !strings.Contains(err.Error(), "does not exist") || len(err.Error()) > 200 {
		t.Errorf("ImportState(a 1 MiB group name) = %.300v (%d bytes), want does not exist within 200 bytes", err, len(fmt.Sprint(err)))
	}

	// Removing a group removes its tools; the meta tool goes with the last group.
	mustAdd(t, tk, writes("fetch", nil), toolkit.InGroup("web"))
	mustAdd(t, tk, writes("local", nil))
	if err := tk.RemoveGroup("web"); err != nil {
		t.Fatal(err)
	}
	if _, ok := tk.Get("fetch"); ok {
		t.Error("fetch survived its group")
	}
	if names := schemaNames(tk.Schemas([]string{"web"})); !slices.Equal(names, []string{"local"}) {
		t.Errorf("schemas = %v", names)
	}
}

// TestSchemasSkillViewerFirst: as AgentScope 2.x lists them
// (_get_available_tools), the skill viewer comes first, then reset_tools,
// then the tools group by group (basic first), wherever the viewer was
// registered.
func TestSchemasSkillViewerFirst(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, writes("b1", nil))
	mustAddGroup(t, tk, toolkit.Group{Name: "web", Description: "Web tools."})
	mustAdd(t, tk, writes("w1", nil), toolkit.InGroup("web"))
	mustAdd(t, tk, writes(toolkit.SkillViewerName, nil), toolkit.ReadOnly(), toolkit.WithKind(toolkit.KindSkill))
	mustAdd(t, tk, writes("b2", nil))
	if got, want := schemaNames(tk.Schemas([]string{"web"})), []string{"Skill", "reset_tools", "b1", "b2", "w1"}; !slices.Equal(got, want) {
		t.Errorf("Schemas = %v, want %v", got, want)
	}
}

// A ListedWith tool is listed while one of its groups, read for every
// listing, is basic or active, and carries them in the catalog (what a
// worker announces).
func TestSchemasListedWith(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "web", Description: "Web tools."})
	var groups atomic.Pointer[[]string]
	groups.Store(&[]string{"web"})
	mustAdd(t, tk, writes("cond", nil), toolkit.ListedWith(func() []string { return *groups.Load() }))
	mustAdd(t, tk, writes("b1", nil))
	for _, tt := range []struct {
		groups, active, want []string
	}{
		{[]string{"web"}, nil, []string{"reset_tools", "b1"}},
		{[]string{"web"}, []string{"web"}, []string{"reset_tools", "cond", "b1"}},
		{[]string{toolkit.BasicGroup}, nil, []string{"reset_tools", "cond", "b1"}},
		{nil, []string{"web"}, []string{"reset_tools", "b1"}},
	} {
		groups.Store(&tt.groups)
		if got := schemaNames(tk.Schemas(tt.active)); !slices.Equal(got, tt.want) {
			t.Errorf("groups %v, active %v: Schemas = %v, want %v", tt.groups, tt.active, got, tt.want)
		}
	}
	groups.Store(&[]string{"web"})
	c := tk.Catalog()
	if ct := c.Tools[0]; !ct.Conditional || !slices.Equal(ct.ListedWith, []string{"web"}) || c.Tools[1].Conditional {
		t.Errorf("catalog: %+v", c.Tools)
	}
	// Calls do not depend on the listing.
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "c", Name: "cond", Input: map[string]any{}}); r.State != toolkit.StateSuccess {
		t.Errorf("unlisted call: %s %s", r.State, r.Text())
	}
}

func TestSchemas(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAdd(t, tk, writes("b1", nil))
	mustAddGroup(t, tk, toolkit.Group{Name: "web", Description: "Web tools."})
	mustAddGroup(t, tk, toolkit.Group{Name: "files", Description: "File tools.", Active: true})
	mustAdd(t, tk, writes("f1", nil), toolkit.InGroup("files"))
	mustAdd(t, tk, writes("w1", nil), toolkit.InGroup("web"))
	mustAdd(t, tk, writes("b2", nil))
	mustAdd(t, tk, writes("w2", nil), toolkit.InGroup("web"))

	tests := []struct {
		name   string
		active []string
		want   []string
	}{
		{"basic only", nil, []string{"reset_tools", "b1", "b2"}},
		{"group by group, in the groups' order", []string{"files", "web"}, []string{"reset_tools", "b1", "b2", "w1", "w2", "f1"}},
		{"one group", []string{"web"}, []string{"reset_tools", "b1", "b2", "w1", "w2"}},
		{"unknown names are ignored", []string{"nope", "basic"}, []string{"reset_tools", "b1", "b2"}},
	}
	for _, tt := range tests {
		if got := schemaNames(tk.Schemas(tt.active)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Schemas(%v) = %v, want %v", tt.name, tt.active, got, tt.want)
		}
	}

	// The meta tool's schema shows the current activation.
	meta := tk.Schemas([]string{"web"})[0]
	props := meta.Function.Parameters["properties"].(map[string]any)
	if d := props["web"].(map[string]any)["description"]; d != "Web tools. (currently active)" {
		t.Errorf("web description = %q", d)
	}
	if d := props["files"].(map[string]any)["description"]; d != "File tools. (currently inactive)" {
		t.Errorf("files description = %q", d)
	}
	if !strings.HasSuffix(meta.Function.Description, "Currently active groups: web.") {
		t.Errorf("meta description ends %q", meta.Function.Description[len(meta.Function.Description)-40:])
	}
	if _, ok := meta.Function.Parameters["required"]; ok {
		t.Error("the meta tool schema has a required list")
	}

	// A session that never called reset_tools gets the groups marked Active.
	got, err := tk.SessionSchemas(ctx, "new", 0)
	if err != nil {
		t.Fatal(err)
	}
	if names := schemaNames(got); !slices.Equal(names, []string{"reset_tools", "b1", "b2", "f1"}) {
		t.Errorf("default session schemas = %v", names)
	}
	if r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: "f1", Session: "new"}); r.final.State != toolkit.StateSuccess {
		t.Errorf("default-active group's tool: %+v", r.final)
	}

	// A schema handed out is a copy: changing it changes nothing.
	s, _ := tk.Schema("b1")
	s.Function.Parameters["properties"].(map[string]any)["evil"] = map[string]any{"type": "string"}
	s.Function.Parameters["type"] = "string"
	s2, _ := tk.Schema("b1")
	jsonEqual(t, "schema after mutating a copy", s2.Function.Parameters, map[string]any{"type": "object", "properties": map[string]any{}})

	if _, ok := tk.Schema("nope"); ok {
		t.Error("Schema(nope) found")
	}
	if ms, ok := tk.Schema(toolkit.MetaToolName); !ok || ms.Function.Name != toolkit.MetaToolName {
		t.Errorf("Schema(reset_tools) = %+v, %v", ms, ok)
	}
}

func TestRegistry(t *testing.T) {
	tk := newToolkit(t, nil)
	var changes atomic.Int32
	stop := tk.OnChange(func() { changes.Add(1) })
	mustAddGroup(t, tk, toolkit.Group{Name: "g", Description: "G."})
	mustAdd(t, tk, writes("a", nil), toolkit.ReadOnly())
	mustAdd(t, tk, writes("b", nil), toolkit.InGroup("g"), toolkit.WithIdempotency(toolkit.Idempotent), toolkit.ConcurrencyUnsafe())

	a, ok := tk.Get("a")
	if !ok || !a.ReadOnly() || a.Idempotency() != toolkit.NoSideEffects || !a.ConcurrencySafe() || a.Group() != toolkit.BasicGroup {
		t.Errorf("a = %+v", a)
	}
	b, _ := tk.Get("b")
	if b.ReadOnly() || b.Idempotency() != toolkit.Idempotent || b.ConcurrencySafe() || b.Group() != "g" {
		t.Errorf("b = %+v", b)
	}
	if meta, ok := tk.Get(toolkit.MetaToolName); !ok || meta.Name != toolkit.MetaToolName {
		t.Error("Get(reset_tools) failed")
	}
	if names := toolNames(tk.Tools()); !slices.Equal(names, []string{"a", "b"}) {
		t.Errorf("Tools = %v", names)
	}
	tk.Remove("a", "unknown")
	if _, ok := tk.Get("a"); ok {
		t.Error("a still registered after Remove")
	}
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "a"}); r.Code != toolkit.CodeNotFound {
		t.Errorf("call after Remove: %+v", r)
	}
	tk.Remove("unknown") // no change, no notification
	n := changes.Load()
	tk.Clear()
	if len(tk.Tools()) != 0 || len(tk.Groups()) != 0 || len(tk.Schemas(nil)) != 0 {
		t.Error("Clear left something behind")
	}
	if changes.Load() != n+1 {
		t.Errorf("OnChange fired %d times for Clear", changes.Load()-n)
	}
	if n != 4 {
		t.Errorf("OnChange fired %d times for 4 changes", n)
	}
	stop()
	mustAdd(t, tk, writes("c", nil))
	if changes.Load() != n+1 {
		t.Error("OnChange fired after stop")
	}

	// Idempotency levels.
	for lvl, want := range map[toolkit.Idempotency]bool{toolkit.IdempotencyUnknown: false, toolkit.NoSideEffects: true, toolkit.Idempotent: true} {
		if lvl.Retryable() != want {
			t.Errorf("%v.Retryable() = %v", lvl, !want)
		}
	}
	// ReadOnly does not lower an explicit level.
	mustAdd(t, tk, writes("d", nil), toolkit.WithIdempotency(toolkit.Idempotent), toolkit.ReadOnly())
	if d, _ := tk.Get("d"); d.Idempotency() != toolkit.Idempotent {
		t.Errorf("d idempotency = %v", d.Idempotency())
	}
}

// TestToolDescribedOneWay: a Tool built by a constructor, or as a literal,
// and described by options reads the same; a plain tool is concurrency
// safe, whichever way it was built.
func TestToolDescribedOneWay(t *testing.T) {
	h := func(context.Context, *toolkit.Call, toolkit.Writer) error { return nil }
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	for _, base := range []*toolkit.Tool{
		{Name: "lit", InputSchema: schema, Handler: h},
		toolkit.Raw("raw", "", schema, h),
		toolkit.Func("fn", "", func(context.Context, struct{}) (string, error) { return "", nil }),
	} {
		if !base.ConcurrencySafe() || base.ReadOnly() || base.Group() != toolkit.BasicGroup || base.Idempotency() != toolkit.IdempotencyUnknown {
			t.Errorf("%s: a plain tool reads safe=%v readOnly=%v group=%q idempotency=%v", base.Name,
				base.ConcurrencySafe(), base.ReadOnly(), base.Group(), base.Idempotency())
		}
		d, err := toolkit.Describe(base, toolkit.ReadOnly(), toolkit.ConcurrencyUnsafe(), toolkit.InGroup("g"))
		if err != nil {
			t.Fatal(err)
		}
		if d.ConcurrencySafe() || !d.ReadOnly() || d.Group() != "g" || d.Idempotency() != toolkit.NoSideEffects {
			t.Errorf("%s described: safe=%v readOnly=%v group=%q", base.Name, d.ConcurrencySafe(), d.ReadOnly(), d.Group())
		}
		if base.ReadOnly() {
			t.Errorf("%s: Describe changed the tool it was given", base.Name)
		}
	}
	if _, err := toolkit.Describe(toolkit.Raw("x", "", schema, h), toolkit.InGroup("")); !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("a bad option: %v", err)
	}
}

// TestOnChangeOutsideTheLock: an OnChange function may use the toolkit,
// even its writers' lock: it runs after the change, outside the lock. A
// one-shot function that unregisters itself (which takes the lock) shows
// it; run inside the lock, it would never return.
func TestOnChangeOutsideTheLock(t *testing.T) {
	tk := newToolkit(t, nil)
	seen := make(chan int, 4)
	var stop func()
	stop = tk.OnChange(func() {
		seen <- len(tk.Tools()) + len(tk.Schemas(nil))
		stop()
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		mustAdd(t, tk, writes("a", nil))
		mustAdd(t, tk, writes("b", nil))
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Add never returned: the OnChange function blocked on the toolkit")
	}
	if n := <-seen; n != 2 {
		t.Errorf("the OnChange function saw %d tools and schemas, want the new tool (2)", n)
	}
	if len(seen) != 0 {
		t.Errorf("the OnChange function ran again after it unregistered itself (saw %d)", <-seen)
	}
}

func toolNames(ts []*toolkit.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestUseRejectsNil(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Use(nil) did not panic")
		}
	}()
	newToolkit(t, nil).Use(nil)
}

func TestMetaTemplate(t *testing.T) {
	if err := toolkit.ParseMetaTemplate("{{.Groups"); err == nil {
		t.Error("a broken template parsed")
	}
	tk := newToolkit(t, &toolkit.Options{MetaResponseTemplate: "on: {{.Names}}"})
	mustAddGroup(t, tk, toolkit.Group{Name: "a", Description: "A."})
	mustAddGroup(t, tk, toolkit.Group{Name: "b", Description: "B."})
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: toolkit.MetaToolName, Input: map[string]any{"b": true, "a": true}})
	if r.Text() != "on: a, b" {
		t.Errorf("custom template: %q", r.Text())
	}
	// Instructions of several groups, and a group without them.
	tk = newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "a", Description: "A.", Instructions: "Use a."})
	mustAddGroup(t, tk, toolkit.Group{Name: "b", Description: "B."})
	mustAddGroup(t, tk, toolkit.Group{Name: "c", Description: "C.", Instructions: "Use c."})
	r = tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: toolkit.MetaToolName, Input: map[string]any{"c": true, "b": true, "a": true}})
	want := "The currently activated tool group(s): a, b, c.\n<tool-instructions>\nThe tool instructions are a collection of suggestions, rules and notifications about how to use the tools in the activated groups.\n" +
		`<group name="a">Use a.</group><group name="c">Use c.</group>` + "\n</tool-instructions>"
	if r.Text() != want {
		t.Errorf("got  %q\nwant %q", r.Text(), want)
	}
}

// deepSchema is an object schema whose properties nest an object n levels
// down: 2n+1 levels of JSON.
// selfSchema is an input schema that holds itself, through a slice of
// maps (the one composite a schema map may hold that JSON decoding never
// makes).
func selfSchema() map[string]any {
	s := objectSchema(map[string]any{})
	s["allOf"] = []map[string]any{s}
	return s
}

// sharedSchema is an input schema n levels deep whose every level holds
// the next one fan times: small in memory, fan^n values written out.
func sharedSchema(n, fan int) map[string]any {
	s := map[string]any{"type": "string"}
	for range n {
		s = map[string]any{"anyOf": slices.Repeat([]any{s}, fan)}
	}
	return objectSchema(map[string]any{"a": s})
}

func deepSchema(n int) map[string]any {
	s := map[string]any{"type": "string"}
	for range n {
		s = objectSchema(map[string]any{"a": s})
	}
	return s
}
