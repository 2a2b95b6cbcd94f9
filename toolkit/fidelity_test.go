package toolkit_test

// Behaviours of AgentScope's Toolkit that the ported test cases
// (agentscope_test.go) do not reach, each pinned against the AgentScope
// source it comes from.

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestInterruptedTextIsAgentScopes: the interrupt notice is 2.x
// call_tool's CancelledError text, word for word (the interrupt tests
// compare with the constant, so they would not see it change).
func TestInterruptedTextIsAgentScopes(t *testing.T) {
	const want = "<system-reminder>The tool call has been interrupted by the user.</system-reminder>"
	if toolkit.InterruptedText != want {
		t.Errorf("InterruptedText = %q, want %q", toolkit.InterruptedText, want)
	}
}

// TestResetToolsNamesChecked: 2.x ResetTools.call checks every name
// against the non-basic groups before it looks at a value, so "basic" is
// an unknown name too, an unknown name is reported even beside a value
// that is not a bool, and neither changes the session's groups.
func TestResetToolsNamesChecked(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "g1", Description: "G1."})
	mustAddGroup(t, tk, toolkit.Group{Name: "g2", Description: "G2."})
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "0", Name: toolkit.MetaToolName, Session: "s", Input: map[string]any{"g1": true}}); r.State != toolkit.StateSuccess {
		t.Fatalf("reset_tools: %s %q", r.State, r.Text())
	}
	for _, tt := range []struct {
		name string
		call toolkit.ToolCall
		want string
	}{
		{"basic is not a group to set", toolkit.ToolCall{Input: map[string]any{"basic": true}},
			"Invalid group name(s): basic. The current available groups are: g1, g2"},
		{"basic set to false", toolkit.ToolCall{Input: map[string]any{"basic": false, "g2": true}},
			"Invalid group name(s): basic. The current available groups are: g1, g2"},
		{"names before values", toolkit.ToolCall{RawInput: `{"g1": "yes", "nope": true}`},
			"Invalid group name(s): nope. The current available groups are: g1, g2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.call.ID, tt.call.Name, tt.call.Session = "1", toolkit.MetaToolName, "s"
			r := collect(t, tk, ctx, tt.call)
			if r.final.State != toolkit.StateError || r.final.Code != toolkit.CodeInvalidInput || r.final.Text() != tt.want {
				t.Errorf("final = %s/%s %q, want %q", r.final.State, r.final.Code, r.final.Text(), tt.want)
			}
			if len(r.chunks) != 1 || r.chunks[0].State != toolkit.StateError {
				t.Errorf("chunks = %+v, want one error chunk", r.chunks)
			}
			if active, _, _ := tk.ActiveGroups(ctx, "s", 0); !slices.Equal(active, []string{"g1"}) {
				t.Errorf("active groups = %v, want [g1] unchanged", active)
			}
		})
	}
}

// TestResetToolsWithoutArguments: a call with no arguments is kwargs {}:
// every group is deactivated.
func TestResetToolsWithoutArguments(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "g1", Description: "G1.", Active: true})
	r := collect(t, tk, ctx, toolkit.ToolCall{ID: "1", Name: toolkit.MetaToolName, Session: "s"})
	if r.final.State != toolkit.StateSuccess || r.final.Text() != "All tool groups are currently deactivated." {
		t.Errorf("final = %s %q", r.final.State, r.final.Text())
	}
	if active, _, _ := tk.ActiveGroups(ctx, "s", 0); len(active) != 0 {
		t.Errorf("active groups = %v, want none", active)
	}
}

// TestMetaToolIsBuiltIn: reset_tools has 2.x ResetTools' flags (not
// read-only, so permission's explore mode denies it; concurrency-safe),
// lives in basic, and, as 2.x remove_tool ignores the built-ins, Remove
// does not take it away.
func TestMetaToolIsBuiltIn(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "g1", Description: "G1."})
	m, ok := tk.Get(toolkit.MetaToolName)
	if !ok {
		t.Fatal("no reset_tools with a group registered")
	}
	if m.ReadOnly() || !m.ConcurrencySafe() || m.Group() != toolkit.BasicGroup {
		t.Errorf("reset_tools: read-only %v, concurrency-safe %v, group %q", m.ReadOnly(), m.ConcurrencySafe(), m.Group())
	}
	tk.Remove(toolkit.MetaToolName)
	if _, ok := tk.Get(toolkit.MetaToolName); !ok {
		t.Error("Remove took reset_tools away")
	}
	if names := schemaNames(tk.Schemas(nil)); !slices.Equal(names, []string{toolkit.MetaToolName}) {
		t.Errorf("schemas = %v", names)
	}
}

// TestClearKeepsMiddleware: 1.x clear() empties tools and groups and
// keeps the middlewares; basic stays usable (2.x's clear also drops
// basic, so that add_tool fails after it: toolbus keeps 1.x's, since
// basic is implicit here).
func TestClearKeepsMiddleware(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	seen := 0
	tk.Use(func(next toolkit.Handler) toolkit.Handler {
		return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			seen++
			return next(ctx, call, w)
		}
	})
	mustAddGroup(t, tk, toolkit.Group{Name: "g1", Description: "G1."})
	mustAdd(t, tk, writes("before", nil, toolkit.Text("x")), toolkit.InGroup("g1"))
	tk.Clear()
	if _, ok := tk.Get(toolkit.MetaToolName); ok {
		t.Error("reset_tools survived Clear")
	}
	mustAdd(t, tk, writes("after", nil, toolkit.Text("y")))
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "after"}); r.Text() != "y" || seen != 1 {
		t.Errorf("after Clear: %q, middleware ran %d times", r.Text(), seen)
	}
}

// TestExtendAddsRequired: 1.x's extended-model merge appends the
// extension's required fields to "required", creating it when the tool
// had none.
func TestExtendAddsRequired(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("f", "F.", objectSchema(map[string]any{"a": map[string]any{"type": "string"}}), echoInput))
	if err := tk.Extend("f", map[string]any{"b": map[string]any{"type": "string"}}, "b"); err != nil {
		t.Fatal(err)
	}
	s, _ := tk.Schema("f")
	jsonEqual(t, "extended", s.Function.Parameters, objectSchema(map[string]any{
		"a": map[string]any{"type": "string"},
		"b": map[string]any{"type": "string"},
	}, "b"))
}

// TestRenameOnlyOnCollision: 1.x applies the namesake strategy only when
// the name is taken, so "rename" registers a free name as it is.
func TestRenameOnlyOnCollision(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, writes("free", nil), toolkit.OnConflict(toolkit.ConflictRename))
	if names := schemaNames(tk.Schemas(nil)); !slices.Equal(names, []string{"free"}) {
		t.Errorf("schemas = %v", names)
	}
	if f, _ := tk.Get("free"); f.OriginalName() != "free" {
		t.Errorf("original name %q", f.OriginalName())
	}
}

// TestNilResultIsNull: 2.x FunctionTool writes any result that is not a
// str as json.dumps(result), so a function that returns None answers
// "null", as one returning a nil pointer, map or slice does here.
func TestNilResultIsNull(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("none", "N.", func(ctx context.Context, in struct{}) (any, error) { return nil, nil }))
	mustAdd(t, tk, toolkit.Func("nilmap", "N.", func(ctx context.Context, in struct{}) (map[string]any, error) { return nil, nil }))
	for _, name := range []string{"none", "nilmap"} {
		r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: name})
		if len(r.chunks) != 1 || r.final.State != toolkit.StateSuccess || r.final.Text() != "null" {
			t.Errorf("%s: %d chunks, final %s %q; want one chunk, success \"null\"", name, len(r.chunks), r.final.State, r.final.Text())
		}
	}
}

// TestExtendSchemaMergesDefs: port of toolkit_basic_test.py::
// test_extended_model_reusing_same_base_model (1.x set_extended_model): an
// extension given as a whole object schema brings its $defs along; a
// definition the tool already has with the same body (titles aside) is
// shared, a new one is added, and one of the same name with another body
// is an error that changes nothing.
func TestExtendSchemaMergesDefs(t *testing.T) {
	base1 := func(title bool) map[string]any {
		m := map[string]any{
			"description": "A base model for testing nested $defs merging.",
			"properties":  map[string]any{"c": map[string]any{"description": "Field c", "type": "integer"}},
			"required":    []any{"c"},
			"type":        "object",
		}
		if title {
			m["title"] = "MyBaseModel1"
		}
		return m
	}
	base2 := func(title bool) map[string]any {
		m := map[string]any{
			"description": "A base model that contains nested MyBaseModel1.",
			"properties": map[string]any{"b": map[string]any{
				"description": "List of MyBaseModel1", "items": map[string]any{"$ref": "#/$defs/MyBaseModel1"}, "type": "array"}},
			"required": []any{"b"},
			"type":     "object",
		}
		if title {
			m["title"] = "MyBaseModel2"
		}
		return m
	}
	tool := map[string]any{
		"$defs":      map[string]any{"MyBaseModel1": base1(true), "MyBaseModel2": base2(true)},
		"properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/MyBaseModel2"}},
		"required":   []any{"a"},
		"type":       "object",
	}
	// ExtendedModelReusingBaseModel's model_json_schema(), titles and all.
	extended := map[string]any{
		"$defs": map[string]any{"MyBaseModel1": base1(true), "MyBaseModel2": base2(true)},
		"properties": map[string]any{
			"another_model": map[string]any{"$ref": "#/$defs/MyBaseModel2", "description": "Reusing MyBaseModel2"},
			"extra_field":   map[string]any{"description": "Extra field", "title": "Extra Field", "type": "string"},
		},
		"required": []any{"another_model", "extra_field"},
		"title":    "ExtendedModelReusingBaseModel",
		"type":     "object",
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Raw("func_with_nested_model", "Function with nested BaseModel parameter.", tool, echoInput))
	if err := tk.ExtendSchema("func_with_nested_model", extended); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"$defs": map[string]any{"MyBaseModel1": base1(false), "MyBaseModel2": base2(false)},
		"properties": map[string]any{
			"a":             map[string]any{"$ref": "#/$defs/MyBaseModel2"},
			"another_model": map[string]any{"$ref": "#/$defs/MyBaseModel2", "description": "Reusing MyBaseModel2"},
			"extra_field":   map[string]any{"description": "Extra field", "type": "string"},
		},
		"required": []any{"a", "another_model", "extra_field"},
		"type":     "object",
	}
	s, _ := tk.Schema("func_with_nested_model")
	jsonEqual(t, "merged", s.Function.Parameters, want)
	ctx := context.Background()
	in := map[string]any{"b": []any{map[string]any{"c": 1.0}}}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: "func_with_nested_model", Input: map[string]any{"a": in, "another_model": in, "extra_field": "x"}}); r.State != toolkit.StateSuccess {
		t.Errorf("call = %s %q", r.State, r.Text())
	}
	if r := tk.Invoke(ctx, toolkit.ToolCall{ID: "2", Name: "func_with_nested_model", Input: map[string]any{"a": in, "another_model": map[string]any{"b": "no"}, "extra_field": "x"}}); r.Code != toolkit.CodeInvalidInput {
		t.Errorf("call with a bad another_model = %s %q, want invalid_input", r.Code, r.Text())
	}

	// A definition the tool does not have is added.
	mustAdd(t, tk, toolkit.Raw("plain", "P.", objectSchema(map[string]any{"q": map[string]any{"type": "string"}}, "q"), echoInput))
	if err := tk.ExtendSchema("plain", extended); err != nil {
		t.Fatal(err)
	}
	s, _ = tk.Schema("plain")
	jsonEqual(t, "defs added", s.Function.Parameters, map[string]any{
		"$defs": map[string]any{"MyBaseModel1": base1(false), "MyBaseModel2": base2(false)},
		"properties": map[string]any{
			"q":             map[string]any{"type": "string"},
			"another_model": map[string]any{"$ref": "#/$defs/MyBaseModel2", "description": "Reusing MyBaseModel2"},
			"extra_field":   map[string]any{"description": "Extra field", "type": "string"},
		},
		"required": []any{"q", "another_model", "extra_field"},
		"type":     "object",
	})

	// The same name with another body is refused, and changes nothing.
	other := base1(false)
	other["required"] = []any{}
	conflicting := map[string]any{"type": "object",
		"$defs":      map[string]any{"MyBaseModel1": other},
		"properties": map[string]any{"z": map[string]any{"$ref": "#/$defs/MyBaseModel1"}}}
	before, _ := tk.Schema("func_with_nested_model")
	err := tk.ExtendSchema("func_with_nested_model", conflicting)
	if err == nil || !strings.Contains(err.Error(), "MyBaseModel1") || !strings.Contains(err.Error(), "conflicts") {
		t.Errorf("conflicting $defs: ExtendSchema = %v, want a conflict naming MyBaseModel1", err)
	}
	after, _ := tk.Schema("func_with_nested_model")
	jsonEqual(t, "after the conflict", after.Function.Parameters, before.Function.Parameters)

	// Bodies compare as the JSON they write: a Go schema's []string
	// "required" is the same as a decoded []any.
	goDefs := base1(false)
	goDefs["required"] = []string{"c"}
	mustAdd(t, tk, toolkit.Raw("go_defs", "G.", map[string]any{"type": "object",
		"$defs":      map[string]any{"MyBaseModel1": goDefs},
		"properties": map[string]any{"x": map[string]any{"$ref": "#/$defs/MyBaseModel1"}}}, echoInput))
	if err := tk.ExtendSchema("go_defs", extended); err != nil {
		t.Errorf("same definition written with []string: %v", err)
	}

	// nil takes the extension, its definitions with it, away.
	if err := tk.ExtendSchema("plain", nil); err != nil {
		t.Fatal(err)
	}
	s, _ = tk.Schema("plain")
	jsonEqual(t, "extension removed", s.Function.Parameters, objectSchema(map[string]any{"q": map[string]any{"type": "string"}}, "q"))
}

// TestValueChunkLineSeparators: 2.x FunctionTool writes a plain value with
// json.dumps(v, ensure_ascii=False), which keeps U+2028 and U+2029 as
// they are (Go's JSON writer escapes them, for JavaScript), and escapes
// control characters as Python does; a backslash written before "u2028"
// stays an escaped backslash.
func TestValueChunkLineSeparators(t *testing.T) {
	// json.dumps({"s": "a\u2028b\u2029\b\f\x7f\x01<&>\\u2028"}, ensure_ascii=False)
	const want = "{\"s\": \"a\u2028b\u2029\\b\\f\x7f\\u0001<&>\\\\u2028\"}"
	c, err := toolkit.ValueChunk(map[string]any{"s": "a\u2028b\u2029\b\f\x7f\x01<&>\\u2028"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Content[0].Text; got != want {
		t.Errorf("ValueChunk = %q, want %q", got, want)
	}
}

// TestWholeFloatIsAFloatForPython: a number the model wrote with a point
// or an exponent (1.0, 1e3) is a float to json.loads, so AgentScope's
// messages name <class 'float'>, whole as its value is: reset_tools'
// non-bool argument and ToolJSONDecodeError's non-object arguments.
func TestWholeFloatIsAFloatForPython(t *testing.T) {
	ctx := context.Background()
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "g1", Description: "G1."})
	for _, tt := range []struct{ raw, want string }{
		{`{"g1": 1.0}`, "<class 'float'>"},
		{`{"g1": 1e3}`, "<class 'float'>"},
		{`{"g1": -2E0}`, "<class 'float'>"},
		{`{"g1": 1}`, "<class 'int'>"},
		{`{"g1": 1.0,}`, "<class 'float'>"}, // repaired
	} {
		r := tk.Invoke(ctx, toolkit.ToolCall{ID: "1", Name: toolkit.MetaToolName, Session: "s", RawInput: tt.raw})
		want := "Invalid arguments: the argument 'g1' should be a bool value, but got " + tt.want + "."
		if r.State != toolkit.StateError || r.Text() != want {
			t.Errorf("reset_tools %s: %s %q, want %q", tt.raw, r.State, r.Text(), want)
		}
	}
	for _, tt := range []struct{ raw, want string }{
		{`1.0`, "<class 'float'>"},
		{`2e1`, "<class 'float'>"},
		{`7`, "<class 'int'>"},
	} {
		_, err := toolkit.ParseRawInput(tt.raw)
		if want := "decoded into a " + tt.want + " object"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRawInput(%s) = %v, want it to say %q", tt.raw, err, want)
		}
	}
}

// TestWholeFloatWrittenTwice: of a key written twice json.loads keeps
// the last value, so the type named is the last one's.
func TestWholeFloatWrittenTwice(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "g1", Description: "G1."})
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: toolkit.MetaToolName, Session: "s", RawInput: `{"g1": 1.0, "g1": 2}`})
	if want := "Invalid arguments: the argument 'g1' should be a bool value, but got <class 'int'>."; r.Text() != want {
		t.Errorf("reset_tools: %q, want %q", r.Text(), want)
	}
}

// TestResetToolsReadsInputKeysAndFloats: a decoded Input read with its
// keys' order and its floats (ToolCall.InputKeys, InputFloats, as the
// bus's worker reads them off the request) is judged as the text it was
// read from: unknown names listed, and the first value that is not a
// bool named, in the order written; a whole float64 sent as a float is a
// <class 'float'>, one not said to be is the integer JSON's 1 decodes to.
func TestResetToolsReadsInputKeysAndFloats(t *testing.T) {
	tk := newToolkit(t, nil)
	mustAddGroup(t, tk, toolkit.Group{Name: "alpha", Description: "A."})
	mustAddGroup(t, tk, toolkit.Group{Name: "web", Description: "W."})
	for _, tt := range []struct {
		call toolkit.ToolCall
		want string
	}{
		{toolkit.ToolCall{Input: map[string]any{"zeta": true, "omega": true}, InputKeys: []string{"zeta", "omega"}},
			"Invalid group name(s): zeta, omega. The current available groups are: alpha, web"},
		{toolkit.ToolCall{Input: map[string]any{"web": "yes", "alpha": 1.0}, InputKeys: []string{"web", "alpha"}},
			"Invalid arguments: the argument 'web' should be a bool value, but got <class 'str'>."},
		{toolkit.ToolCall{Input: map[string]any{"web": 1.0}, InputFloats: []string{"web"}},
			"Invalid arguments: the argument 'web' should be a bool value, but got <class 'float'>."},
		{toolkit.ToolCall{Input: map[string]any{"web": 1.0}},
			"Invalid arguments: the argument 'web' should be a bool value, but got <class 'int'>."},
		{toolkit.ToolCall{Input: map[string]any{"web": "1.0"}, InputFloats: []string{"web"}}, // replaced since
			"Invalid arguments: the argument 'web' should be a bool value, but got <class 'str'>."},
	} {
		tt.call.ID, tt.call.Name, tt.call.Session = "1", toolkit.MetaToolName, "s"
		if r := tk.Invoke(context.Background(), tt.call); r.Code != toolkit.CodeInvalidInput || r.Text() != tt.want {
			t.Errorf("%v %v %v: %s %q, want %q", tt.call.Input, tt.call.InputKeys, tt.call.InputFloats, r.Code, r.Text(), tt.want)
		}
	}
}

// TestValueChunkRawJSONKeepsKeyOrder: a Go map has no order, so a map a
// tool returns comes out with its keys sorted; a tool that must keep
// the order of an object it was given, as json.dumps keeps a dict's,
// returns it as json.RawMessage, whose keys stay as written, spaced and
// with non-ASCII kept as json.dumps(ensure_ascii=False) writes them.
func TestValueChunkRawJSONKeepsKeyOrder(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{json.RawMessage(`{"city":"成都","b":[1,2],"a":{"z":1,"y":null}}`), `{"city": "成都", "b": [1, 2], "a": {"z": 1, "y": null}}`},
		{map[string]any{"city": "成都", "b": 1}, `{"b": 1, "city": "成都"}`},
	} {
		c, err := toolkit.ValueChunk(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Content[0].Text; got != tt.want {
			t.Errorf("ValueChunk(%v) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// TestNonFiniteFloatResultAsPython: 2.x FunctionTool writes a float
// result as json.dumps(result, ensure_ascii=False) (tool/_adapters.py:
// 176-179), which allows NaN and writes infinities as JavaScript names
// them: "Infinity" and "-Infinity", where fmt prints "+Inf" and "-Inf".
func TestNonFiniteFloatResultAsPython(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
		{math.NaN(), "NaN"},
		{float32(math.Inf(1)), "Infinity"},
		{float32(math.Inf(-1)), "-Infinity"},
	} {
		c, err := toolkit.ValueChunk(tt.v)
		if err != nil || len(c.Content) != 1 || c.Content[0].Text != tt.want {
			t.Errorf("ValueChunk(%v) = %+v, %v; want text %q", tt.v, c.Content, err, tt.want)
		}
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("inf", "I.", func(ctx context.Context, in struct{}) (float64, error) { return math.Inf(1), nil }))
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "inf"}); r.State != toolkit.StateSuccess || r.Text() != "Infinity" {
		t.Errorf("inf: %s %q, want success \"Infinity\"", r.State, r.Text())
	}
}
