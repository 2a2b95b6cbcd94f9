package toolkit

import (
	"context"
	"testing"
)

// Only a schema whose inputs may cost more to validate than their size
// (recursive, or of very many paths) has each input's cost counted: the
// others' calls never walk it.
func TestSchemaCostCountedOnlyWhereItMayGrow(t *testing.T) {
	type address struct {
		Street string `json:"street"`
	}
	type person struct {
		Name string  `json:"name"`
		Home address `json:"home"`
		Work address `json:"work"`
	}
	typed := Func("p", "P.", func(context.Context, person) (string, error) { return "", nil })
	str := map[string]any{"type": "string"}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/$defs/" + name} }
	cases := []struct {
		name   string
		schema map[string]any
		costly bool
	}{
		{"flat", map[string]any{"type": "object", "properties": map[string]any{"text": str}}, false},
		{"typed", typed.InputSchema, false},
		{"references, not recursive", map[string]any{"type": "object",
			"$defs":      map[string]any{"address": map[string]any{"type": "object", "properties": map[string]any{"street": str}}},
			"properties": map[string]any{"home": ref("address"), "work": ref("address")}}, false},
		{"recursive", map[string]any{"type": "object",
			"$defs":      map[string]any{"node": map[string]any{"type": "object", "properties": map[string]any{"next": ref("node")}}},
			"properties": map[string]any{"head": ref("node")}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, g, err := compileSchema(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			if (g != nil) != tc.costly {
				t.Errorf("inputs' cost counted: %v, want %v", g != nil, tc.costly)
			}
		})
	}
}
