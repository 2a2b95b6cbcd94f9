package toolkit_test

import (
	"context"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// A field tagged `json:"-,"` is named "-" (encoding/json's rule: only the
// whole tag "-" leaves a field out). Its default and enum tags were
// dropped, as if it were left out, so the schema asked for "-" without
// them and a call without it failed where the default should have served.
func TestDashNamedFieldKeepsItsTags(t *testing.T) {
	type in struct {
		Dash string `json:"-," enum:"a,b" default:"b"`
	}
	s, err := toolkit.SchemaFor[in]()
	if err != nil {
		t.Fatal(err)
	}
	prop, _ := s["properties"].(map[string]any)["-"].(map[string]any)
	if prop == nil {
		t.Fatalf("no property \"-\" in %v", s)
	}
	if prop["default"] != "b" || prop["enum"] == nil {
		t.Errorf("property \"-\" is %v; want default b and enum [a b]", prop)
	}
	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("dash", "Dash.", func(ctx context.Context, v in) (string, error) { return v.Dash, nil }))
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "dash", Input: map[string]any{}})
	if r.Code != "" || r.Text() != "b" {
		t.Errorf("a call without \"-\": %s %q; want the default b", r.Code, r.Text())
	}
	r = tk.Invoke(context.Background(), toolkit.ToolCall{ID: "2", Name: "dash", Input: map[string]any{"-": "c"}})
	if r.Code != toolkit.CodeInvalidInput {
		t.Errorf("a call with \"-\": \"c\": %s %q; want invalid_input (enum a, b)", r.Code, r.Text())
	}
}
