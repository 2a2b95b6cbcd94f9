package schemagraph

import (
	"encoding/json"
	"testing"
)

func mustCheck(t *testing.T, schema string) *Graph {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(schema), &m); err != nil {
		t.Fatal(err)
	}
	g, err := Check(m)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return g
}

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// branching is recursive through "x", and both of its branches descend
// into "x" alike: the validator applies it once per path.
const branching = `{"$defs": {"T": {"anyOf": [
	{"type": "object", "properties": {"x": {"$ref": "#/$defs/T"}}},
	{"type": "object", "properties": {"x": {"$ref": "#/$defs/T"}}}]}},
	"type": "object", "properties": {"x": {"$ref": "#/$defs/T"}}}`

// nestedX is {"x": {"x": … {} …}}, depth levels of "x".
func nestedX(depth int) map[string]any {
	v := map[string]any{}
	for range depth {
		v = map[string]any{"x": v}
	}
	return v
}

// Cost counts the applications of each keyword's subschemas to the
// values they apply to, as the validator makes them (every branch taken).
func TestCost(t *testing.T) {
	cases := []struct {
		name, schema, input string
		want                int
	}{
		{"root only", `{"type": "object"}`, `{"a": 1}`, 1},
		{"properties present", `{"properties": {"a": {}, "b": {}}}`, `{"a": 1}`, 2},
		{"object keywords", `{"properties": {"a": {}}, "patternProperties": {"^p": {}}, "additionalProperties": {},
			"propertyNames": {}, "unevaluatedProperties": {}}`, `{"a": 1, "p1": 2, "z": 3}`,
			1 + 1 + 1 + 1 + 3 + 3}, // a; p1 by pattern; z additional; every name; every property
		{"array keywords", `{"prefixItems": [{}, true], "items": {}, "contains": {}}`, `[1, 2, 3]`,
			1 + 1 + 3 + 3}, // item 0 by position (item 1's is true); every item twice
		{"draft 7 items list", `{"items": [{}], "additionalItems": {}}`, `[1, 2, 3]`, 1 + 1 + 2},
		{"in place", `{"allOf": [{}, {"anyOf": [{}, {}]}], "not": {}, "if": {}, "then": {}, "else": {}}`, `1`, 1 + 1 + 3 + 1 + 3},
		{"reference", `{"$defs": {"s": {"allOf": [{}, {}]}}, "properties": {"a": {"$ref": "#/$defs/s"}, "b": {"$ref": "#/$defs/s"}}}`,
			`{"a": 1, "b": {"c": 2}}`, 1 + 2*(1+1+2)},
		{"tree", `{"$defs": {"n": {"properties": {"c": {"items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"}`,
			`{"c": [{"c": []}, {"c": [{}]}]}`, 1 + 1 + 1 + 2*(1+1+1) + 2},
		{"branching shallow", branching, `{"x": {"x": {}}}`, 1<<4 - 3},
		{"branching deep", branching, `{"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {"x": {}}}}}}}}}}}`, 1<<12 - 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := mustCheck(t, tc.schema)
			if got := g.Cost(decode(t, tc.input), 1_000_000); got != tc.want {
				t.Errorf("Cost = %d, want %d", got, tc.want)
			}
		})
	}
}

// Past its budget Cost says budget+1, having done about nothing for an
// input whose validation would never end; so for an input that holds
// itself, or is nested past MaxDepth.
func TestCostBounded(t *testing.T) {
	g := mustCheck(t, branching)
	const budget = 1_000_000
	for _, depth := range []int{17, 18, 40, 1000} {
		want := budget + 1
		if depth < 18 {
			want = 1<<(depth+2) - 3
		}
		if got := g.Cost(nestedX(depth), budget); got != want {
			t.Errorf("depth %d: Cost = %d, want %d", depth, got, want)
		}
	}
	self := map[string]any{}
	self["x"] = self
	if got := g.Cost(self, budget); got != budget+1 {
		t.Errorf("an input holding itself: Cost = %d, want %d", got, budget+1)
	}
	tree := mustCheck(t, `{"$defs": {"n": {"properties": {"x": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"}`)
	if got := tree.Cost(nestedX(MaxDepth-1), budget); got != 2*MaxDepth {
		t.Errorf("a chain %d deep: Cost = %d, want %d", MaxDepth-1, got, 2*MaxDepth)
	}
	if got := tree.Cost(nestedX(MaxDepth+1), budget); got != budget+1 {
		t.Errorf("a chain %d deep: Cost = %d, want %d", MaxDepth+1, got, budget+1)
	}
}

// A Go caller's input may hold maps and slices of other types, pointers,
// and one value twice: Cost counts them as the validator walks them.
func TestCostGoValues(t *testing.T) {
	g := mustCheck(t, branching)
	json := g.Cost(nestedX(3), 1_000_000)
	leaf := map[string]map[string]any{"x": {}}
	typed := map[string]any{"x": &map[string]any{"x": leaf}}
	if got := g.Cost(typed, 1_000_000); got != json {
		t.Errorf("typed maps: Cost = %d, want %d as for JSON's", got, json)
	}
	items := mustCheck(t, `{"items": {"properties": {"x": {}}}}`)
	if got := items.Cost([]map[string]int{{"x": 1}, {"y": 2}}, 100); got != 1+2+1 {
		t.Errorf("a slice of maps: Cost = %d, want 4", got)
	}
	if got := items.Cost([2]any{map[string]any{"x": 1}, 2.0}, 100); got != 1+2+1 {
		t.Errorf("an array: Cost = %d, want 4", got)
	}
	shared := nestedX(8)
	twice := map[string]any{"x": map[string]any{"x": shared}}
	if got, want := g.Cost(twice, 1_000_000), g.Cost(nestedX(10), 1_000_000); got != want {
		t.Errorf("a value held twice: Cost = %d, want %d", got, want)
	}
}

// Paths counts the paths from the root; a recursive schema has no end of
// them, and neither has a chain whose links descend twice each.
func TestPaths(t *testing.T) {
	chain := `{"$defs": {"a": {"properties": {"x": {"$ref": "#/$defs/b"}, "y": {"$ref": "#/$defs/b"}}},
		"b": {"properties": {"x": {"$ref": "#/$defs/c"}, "y": {"$ref": "#/$defs/c"}}}, "c": {"type": "string"}},
		"properties": {"p": {"$ref": "#/$defs/a"}}}`
	cases := []struct {
		name, schema string
		want         int
	}{
		{"flat", `{"type": "object", "properties": {"a": {"type": "string"}, "b": {}}}`, 3},
		{"defs not applied", `{"$defs": {"x": {}, "y": {}}, "properties": {"a": {"$ref": "#/$defs/x"}}}`, 3},
		{"chain", chain, 1 + 1 + (1 + 2*(1+(1+2*(1+1))))}, // root, p, a: x and y to b, each with x and y to c
		{"tree", `{"$defs": {"n": {"properties": {"c": {"items": {"$ref": "#/$defs/n"}}}}}, "$ref": "#/$defs/n"}`, 101},
		{"branching", branching, 101},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustCheck(t, tc.schema).Paths(100); got != tc.want {
				t.Errorf("Paths(100) = %d, want %d", got, tc.want)
			}
		})
	}
}

// BenchmarkCost counts a wide tree's input (10,000 nodes under one) and a
// branching schema's input built to cost 2^40.
//
//	go test -run '^$' -bench BenchmarkCost -benchmem ./internal/schemagraph
func BenchmarkCost(b *testing.B) {
	var tree map[string]any
	if err := json.Unmarshal([]byte(`{"$defs": {"n": {"type": "object", "properties": {"c": {"type": "array", "items": {"$ref": "#/$defs/n"}}}}},
		"type": "object", "properties": {"root": {"$ref": "#/$defs/n"}}}`), &tree); err != nil {
		b.Fatal(err)
	}
	items := make([]any, 10_000)
	for i := range items {
		items[i] = map[string]any{"c": []any{}}
	}
	var branch map[string]any
	if err := json.Unmarshal([]byte(branching), &branch); err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name   string
		schema map[string]any
		input  any
	}{
		{"wide", tree, map[string]any{"root": map[string]any{"c": items}}},
		{"branching", branch, nestedX(40)},
	}
	for _, tc := range cases {
		g, err := Check(tc.schema)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.Cost(tc.input, 1_000_000)
			}
		})
	}
}
