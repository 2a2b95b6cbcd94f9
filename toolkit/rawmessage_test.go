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
