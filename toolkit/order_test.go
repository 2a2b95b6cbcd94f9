package toolkit_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

type orderedIn struct {
	Thinking string `json:"thinking" jsonschema:"think first"`
	Query    string `json:"query"`
	Limit    int    `json:"limit,omitempty"`
	Filter   struct {
		Zeta  string `json:"zeta"`
		Alpha string `json:"alpha"`
	} `json:"filter"`
}

// inOrder reports whether the strings occur in s in this order.
func inOrder(s string, words ...string) bool {
	at := -1
	for _, w := range words {
		i := strings.Index(s, w)
		if i <= at {
			return false
		}
		at = i
	}
	return true
}

// TestSchemasKeepDeclarationOrder: a typed tool's properties come out in
// the struct's field order (nested structs too) and reset_tools' groups in
// registration order, in the JSON of Schemas the model sees; presets hide
// properties and Extend appends its own after the declared ones.
func TestSchemasKeepDeclarationOrder(t *testing.T) {
	tk := toolkit.New(nil)
	for _, g := range []string{"web", "files", "alpha"} {
		if err := tk.AddGroup(toolkit.Group{Name: g, Description: g + " tools"}); err != nil {
			t.Fatal(err)
		}
	}
	search := toolkit.Func("search", "Search.", func(ctx context.Context, in orderedIn) (string, error) { return in.Query, nil })
	if err := tk.Add(search); err != nil {
		t.Fatal(err)
	}
	preset := toolkit.Func("preset", "Preset.", func(ctx context.Context, in orderedIn) (string, error) { return in.Query, nil })
	if err := tk.Add(preset, toolkit.WithPresets(map[string]any{"query": "fixed"})); err != nil {
		t.Fatal(err)
	}
	if err := tk.Extend("search", map[string]any{"aaa_extra": map[string]any{"type": "string"}}); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(tk.Schemas(nil))
	if err != nil {
		t.Fatal(err)
	}
	var schemas []map[string]any
	if err := json.Unmarshal(b, &schemas); err != nil {
		t.Fatal(err)
	}
	if len(schemas) != 3 {
		t.Fatalf("%d schemas: %s", len(schemas), b)
	}
	text := func(i int) string { // the JSON from schema i on
		fn := strings.Index(string(b), `"name":"`+schemas[i]["function"].(map[string]any)["name"].(string)+`"`)
		return string(b[fn:])
	}
	if meta := text(0); !inOrder(meta, `"web"`, `"files"`, `"alpha"`) {
		t.Errorf("reset_tools' groups are not in registration order: %s", meta)
	}
	if s := text(1); !inOrder(s, `"thinking"`, `"query"`, `"limit"`, `"filter"`, `"zeta"`, `"alpha"`, `"aaa_extra"`, `"required":["thinking"`) {
		t.Errorf("search's properties are not in declaration order: %s", s)
	}
	if s := text(2); !inOrder(s, `"thinking"`, `"limit"`, `"filter"`) || strings.Contains(s[:strings.Index(s, `"required":["thinking"`)], `"query"`) {
		t.Errorf("preset's properties: %s", s)
	}
	if strings.Contains(string(b), `"order"`) {
		t.Errorf("the order itself reached the model's JSON: %s", b)
	}

	// The JSON decodes to the same schema as before: only the order changed.
	got := schemas[1]["function"].(map[string]any)["parameters"]
	want, _ := tk.Schema("search")
	wb, _ := json.Marshal(want.Function.Parameters)
	var wantParams any
	_ = json.Unmarshal(wb, &wantParams)
	if !reflect.DeepEqual(got, wantParams) {
		t.Errorf("parameters changed:\n%v\n%v", got, wantParams)
	}
}

// TestMarshalSchema: without an order it is encoding/json; keys the order
// lists that the schema lacks are skipped, the others follow sorted.
func TestMarshalSchema(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"b": map[string]any{"type": "string"}, "a": true, "c": []any{1, "x"}}}
	plain, _ := json.Marshal(schema)
	if b, err := toolkit.MarshalSchema(schema, nil); err != nil || string(b) != string(plain) {
		t.Errorf("no order: %s %v", b, err)
	}
	b, err := toolkit.MarshalSchema(schema, []toolkit.KeyOrder{{Path: "", Keys: []string{"type", "properties"}}, {Path: "/properties", Keys: []string{"gone", "b"}}})
	if err != nil || string(b) != `{"type":"object","properties":{"b":{"type":"string"},"a":true,"c":[1,"x"]}}` {
		t.Errorf("ordered: %s %v", b, err)
	}
	order, err := toolkit.OrderOf([]byte(`{"z":1,"a":{"y":[{"q":1,"p":2}],"b":2},"m":[]}`))
	want := []toolkit.KeyOrder{{Path: "/a/y/0", Keys: []string{"q", "p"}}, {Path: "/a", Keys: []string{"y", "b"}}, {Path: "", Keys: []string{"z", "a", "m"}}}
	if err != nil || !reflect.DeepEqual(order, want) {
		t.Errorf("OrderOf: %+v %v", order, err)
	}
}

// TestUnknownGroupNamesKeepInputOrder: reset_tools names unknown groups in
// the order the model wrote them (its raw arguments); a decoded object has
// no order, so they are sorted.
func TestUnknownGroupNamesKeepInputOrder(t *testing.T) {
	tk := toolkit.New(nil)
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web tools."}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		call toolkit.ToolCall
		want string
	}{
		{toolkit.ToolCall{Name: toolkit.MetaToolName, RawInput: `{"zeta": true, "web": true, "alpha": false}`}, "Invalid group name(s): zeta, alpha."},
		{toolkit.ToolCall{Name: toolkit.MetaToolName, RawInput: `{zeta: True, 'alpha': False,}`}, "Invalid group name(s): zeta, alpha."}, // repaired
		{toolkit.ToolCall{Name: toolkit.MetaToolName, Input: map[string]any{"zeta": true, "alpha": false}}, "Invalid group name(s): alpha, zeta."},
	} {
		final := tk.Invoke(context.Background(), tt.call)
		if final.Code != toolkit.CodeInvalidInput || !strings.HasPrefix(final.Text(), tt.want) {
			t.Errorf("%+v: %s %q, want %q", tt.call, final.Code, final.Text(), tt.want)
		}
	}
}

// TestNonBoolGroupValueNamesPythonType: the non-bool message names the
// type as AgentScope's does: the Python type json.loads gives the value.
func TestNonBoolGroupValueNamesPythonType(t *testing.T) {
	tk := toolkit.New(nil)
	if err := tk.AddGroup(toolkit.Group{Name: "web", Description: "Web tools."}); err != nil {
		t.Fatal(err)
	}
	for raw, want := range map[string]string{`"yes"`: "<class 'str'>", `1`: "<class 'int'>", `1.5`: "<class 'float'>",
		`null`: "<class 'NoneType'>", `[true]`: "<class 'list'>", `{"a":1}`: "<class 'dict'>"} {
		final := tk.Invoke(context.Background(), toolkit.ToolCall{Name: toolkit.MetaToolName, RawInput: `{"web": ` + raw + `}`})
		if w := "Invalid arguments: the argument 'web' should be a bool value, but got " + want + "."; final.Text() != w {
			t.Errorf("%s: %q, want %q", raw, final.Text(), w)
		}
	}
}

// TestNonBoolGroupValueFirstInInputOrder: AgentScope checks reset_tools'
// values in the order the model wrote them (kwargs order) and names the
// first that is not a bool; a decoded object has no order, so the groups'
// order is used.
func TestNonBoolGroupValueFirstInInputOrder(t *testing.T) {
	tk := toolkit.New(nil)
	for _, g := range []string{"alpha", "web"} {
		if err := tk.AddGroup(toolkit.Group{Name: g, Description: g + " tools."}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		call toolkit.ToolCall
		want string
	}{
		{toolkit.ToolCall{Name: toolkit.MetaToolName, RawInput: `{"web": "yes", "alpha": 1}`}, "the argument 'web' should be a bool value, but got <class 'str'>."},
		{toolkit.ToolCall{Name: toolkit.MetaToolName, RawInput: `{web: 'yes', alpha: 1,}`}, "the argument 'web' should be a bool value, but got <class 'str'>."}, // repaired
		{toolkit.ToolCall{Name: toolkit.MetaToolName, Input: map[string]any{"web": "yes", "alpha": 1.0}}, "the argument 'alpha' should be a bool value, but got <class 'int'>."},
	} {
		final := tk.Invoke(context.Background(), tt.call)
		if want := "Invalid arguments: " + tt.want; final.Code != toolkit.CodeInvalidInput || final.Text() != want {
			t.Errorf("%+v: %s %q, want %q", tt.call, final.Code, final.Text(), want)
		}
	}
}

// TestSchemasListGroupByGroup: AgentScope 2.x lists tools group by group
// (basic first, then the active groups in the order they were created),
// each group's tools in the order they were added, whatever order tools
// of different groups were added in.
func TestSchemasListGroupByGroup(t *testing.T) {
	tk := toolkit.New(nil)
	for _, g := range []string{"g1", "g2"} {
		if err := tk.AddGroup(toolkit.Group{Name: g, Description: g + " tools."}); err != nil {
			t.Fatal(err)
		}
	}
	noop := func(name string) *toolkit.Tool {
		return toolkit.Raw(name, name+".", nil, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil })
	}
	for _, r := range []struct{ name, group string }{{"a2", "g2"}, {"b1", "basic"}, {"c1", "g1"}, {"d2", "g2"}, {"e1", "basic"}} {
		if err := tk.Add(noop(r.name), toolkit.InGroup(r.group)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, s := range tk.Schemas([]string{"g2", "g1"}) {
		got = append(got, s.Function.Name)
	}
	if want := []string{toolkit.MetaToolName, "b1", "e1", "c1", "a2", "d2"}; !slices.Equal(got, want) {
		t.Errorf("schemas = %v, want %v", got, want)
	}
}
