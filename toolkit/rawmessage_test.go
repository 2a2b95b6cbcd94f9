package toolkit_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A json.RawMessage field takes any JSON value the model sends, as a
// free-form argument: its schema is {} (jsonschema-go's default, "array
// of bytes", refused an object).
func TestRawMessageFieldTakesAnyJSON(t *testing.T) {
	type in struct {
		Query  string          `json:"query"`
		Params json.RawMessage `json:"params,omitempty"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("search", "Search.", func(ctx context.Context, in in) (string, error) {
		return in.Query + " " + string(in.Params), nil
	}))
	schema := tk.Schemas(nil)[0].Function.Parameters
	if p := schema["properties"].(map[string]any)["params"].(map[string]any); len(p) != 0 {
		t.Errorf("params' schema = %v, want {}", p)
	}
	for _, tt := range []struct {
		params any
		want   string
	}{
		{map[string]any{"limit": 5}, `q {"limit":5}`},
		{[]any{"a", 1}, `q ["a",1]`},
		{"text", `q "text"`},
	} {
		r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: "search", Input: map[string]any{"query": "q", "params": tt.params}})
		if r.final.State != toolkit.StateSuccess || r.final.Text() != tt.want {
			t.Errorf("params %v: %s %q, want %q", tt.params, r.final.State, r.final.Text(), tt.want)
		}
	}
}

// A *json.RawMessage field (an optional free-form argument) takes any JSON
// value too: jsonschema-go made its schema {"type": ["null"]}, which
// refused everything but null.
func TestRawMessagePointerFieldTakesAnyJSON(t *testing.T) {
	type in struct {
		Params *json.RawMessage   `json:"params,omitempty"`
		List   []*json.RawMessage `json:"list,omitempty"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("search", "Search.", func(ctx context.Context, in in) (string, error) {
		s := ""
		if in.Params != nil {
			s = string(*in.Params)
		}
		for _, e := range in.List {
			s += " " + string(*e)
		}
		return s, nil
	}))
	schema := tk.Schemas(nil)[0].Function.Parameters
	if p := schema["properties"].(map[string]any)["params"].(map[string]any); len(p) != 0 {
		t.Errorf("params' schema = %v, want {}", p)
	}
	r := collect(t, tk, context.Background(), toolkit.ToolCall{ID: "1", Name: "search", Input: map[string]any{
		"params": map[string]any{"limit": 5}, "list": []any{"a", 1},
	}})
	if want := `{"limit":5} "a" 1`; r.final.State != toolkit.StateSuccess || r.final.Text() != want {
		t.Errorf("%s %q, want %q", r.final.State, r.final.Text(), want)
	}
}

// A json.RawMessage field of a struct held as a map's values is {} too,
// not the JSON Schema true.
func TestRawMessageFieldInMapValue(t *testing.T) {
	type value struct {
		Params json.RawMessage `json:"params"`
	}
	type in struct {
		ByKey map[string]value `json:"by_key"`
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("m", "M.", func(ctx context.Context, in in) (string, error) { return "", nil }))
	schema := tk.Schemas(nil)[0].Function.Parameters
	v := schema["properties"].(map[string]any)["by_key"].(map[string]any)["additionalProperties"].(map[string]any)
	if p, ok := v["properties"].(map[string]any)["params"].(map[string]any); !ok || len(p) != 0 {
		t.Errorf("params' schema = %#v, want {}", v["properties"].(map[string]any)["params"])
	}
}
