package toolkit

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/internal/schemagraph"
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
	// A chain of anyOf of two references to the next link: 2^12 paths
	// from 40 subschemas.
	chain := map[string]any{"l12": map[string]any{"type": "number"}}
	for i := 11; i >= 1; i-- {
		r := ref(fmt.Sprintf("l%d", i+1))
		chain[fmt.Sprintf("l%d", i)] = map[string]any{"anyOf": []any{r, r}}
	}
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
		{"shared definitions past the floor", sharedDefs(t), false},
		{"multiplying references", map[string]any{"type": "object", "$defs": chain,
			"properties": map[string]any{"xs": map[string]any{"type": "array", "items": ref("l1")}}}, true},
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

// sharedDefs is a schema as pydantic writes one for a model whose
// submodels are used twice each (one of them Optional): 67 paths from 40
// subschemas. Under it a flat input of 1 MiB (a series of 500,000 small
// numbers) applies 1.5 million subschemas, as it does under the same
// schema written out without references, whose inputs are never counted:
// counted, it would be refused as too complex.
func sharedDefs(t *testing.T) map[string]any {
	t.Helper()
	const schema = `{
 "$defs": {
  "Series": {"type": "object", "required": ["name", "values"], "properties": {
   "name": {"type": "string"}, "unit": {"anyOf": [{"type": "string"}, {"type": "null"}]},
   "start": {"type": "string", "format": "date-time"}, "step_s": {"type": "number"},
   "source": {"anyOf": [{"type": "string"}, {"type": "null"}]},
   "labels": {"type": "object", "additionalProperties": {"type": "string"}},
   "values": {"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}},
  "Window": {"type": "object", "properties": {
   "from": {"type": "string"}, "to": {"type": "string"}, "tz": {"anyOf": [{"type": "string"}, {"type": "null"}]},
   "calendar": {"anyOf": [{"type": "string", "enum": ["business", "all"]}, {"type": "null"}]},
   "exclude": {"type": "array", "items": {"type": "string"}}}}
 },
 "type": "object", "required": ["series"], "properties": {
  "series": {"$ref": "#/$defs/Series"},
  "baseline": {"anyOf": [{"$ref": "#/$defs/Series"}, {"type": "null"}]},
  "window": {"$ref": "#/$defs/Window"},
  "compare_window": {"anyOf": [{"$ref": "#/$defs/Window"}, {"type": "null"}]},
  "method": {"type": "string", "enum": ["zscore", "iqr", "mad"]},
  "threshold": {"anyOf": [{"type": "number"}, {"type": "null"}]}}
}`
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		t.Fatal(err)
	}
	g, err := schemagraph.Check(m)
	if err != nil {
		t.Fatal(err)
	}
	raw := `{"series": {"name": "requests", "values": [` + strings.TrimSuffix(strings.Repeat("1,", 500_000), ",") + `]}}`
	var in any
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		t.Fatal(err)
	}
	if c := g.Cost(in, maxValidationCost); c <= maxValidationCost {
		t.Fatalf("a series of 500,000 numbers costs %d, within the budget: the case shows nothing", c)
	}
	return m
}
