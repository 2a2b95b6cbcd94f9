package toolkit

import (
	"math"
	"reflect"
	"testing"
)

// The fast paths must never change an outcome: whenever quickSchema
// accepts an input the full validator accepts it too, and whenever
// fieldPlan decodes an input it produces what encoding/json produces.

var quickInputs = []map[string]any{
	nil,
	{},
	{"s": "x"},
	{"s": "x", "i": 3.0, "n": 2.5, "b": true, "a": []any{1.0}, "o": map[string]any{}, "z": nil, "any": "v"},
	{"s": 1.0},
	{"s": nil},
	{"i": 3.5},
	{"i": 3},
	{"i": int64(1) << 40},
	{"i": math.Inf(1)},
	{"i": math.NaN()},
	{"n": "1"},
	{"n": uint32(7)},
	{"b": "true"},
	{"a": []string{"x"}},
	{"a": map[string]any{}},
	{"o": []any{}},
	{"z": 0.0},
	{"extra": 1.0},
	{"s": "x", "extra": struct{}{}},
}

func TestQuickSchemaAgreesWithValidator(t *testing.T) {
	props := map[string]any{
		"s":   map[string]any{"type": "string", "description": "d"},
		"i":   map[string]any{"type": "integer", "title": "I"},
		"n":   map[string]any{"type": "number", "default": 1.0},
		"b":   map[string]any{"type": "boolean"},
		"a":   map[string]any{"type": "array"},
		"o":   map[string]any{"type": "object"},
		"z":   map[string]any{"type": "null"},
		"any": map[string]any{"description": "anything"},
	}
	schemas := map[string]map[string]any{
		"open":     {"type": "object", "properties": props},
		"required": {"type": "object", "properties": props, "required": []any{"s"}},
		"closed":   {"type": "object", "properties": props, "additionalProperties": false},
	}
	for name, schema := range schemas {
		q := newQuickSchema(schema)
		if q == nil {
			t.Fatalf("%s: not recognised as simple", name)
		}
		v, _, err := compileSchema(schema)
		if err != nil {
			t.Fatal(err)
		}
		accepted := 0
		for _, in := range quickInputs {
			if q.accepts(in) {
				accepted++
			}
			var inst any = in
			if in == nil {
				inst = map[string]any{}
			}
			if q.accepts(in) && v.Validate(inst) != nil {
				t.Errorf("%s: quick accepted %v, the validator rejects it: %v", name, in, v.Validate(inst))
			}
		}
		if accepted < 3 {
			t.Errorf("%s: quick accepted only %d inputs", name, accepted)
		}
	}
	// Schemas with anything more are left to the validator.
	for _, s := range []map[string]any{
		{"type": "object", "properties": map[string]any{"s": map[string]any{"type": "string", "enum": []any{"a"}}}},
		{"type": "object", "properties": map[string]any{"s": map[string]any{"type": []any{"string", "null"}}}},
		{"type": "object", "properties": map[string]any{"s": map[string]any{"type": "string", "minLength": 1.0}}},
		{"type": "object", "properties": map[string]any{"s": map[string]any{"$ref": "#/$defs/x"}}},
		{"type": "object", "properties": map[string]any{}, "additionalProperties": map[string]any{"type": "string"}},
		{"type": "object", "properties": map[string]any{}, "anyOf": []any{}},
		{"type": "object", "properties": map[string]any{}, "required": []any{1.0}},
		{"type": "object", "properties": map[string]any{"s": "string"}},
	} {
		if newQuickSchema(s) != nil {
			t.Errorf("%v treated as simple", s)
		}
	}
}

type flatIn struct {
	S    string  `json:"s"`
	I    int     `json:"i,omitempty"`
	I8   int8    `json:"i8"`
	U    uint16  `json:"u"`
	F    float64 `json:"f"`
	F32  float32 `json:"f32"`
	B    bool    `json:"b"`
	Def  string  // no tag: named by the field
	Skip string  `json:"-"`
	Dash string  `json:"-,"`
	priv string
}

func TestFieldPlanAgreesWithJSON(t *testing.T) {
	p := newFieldPlan(reflect.TypeFor[flatIn]())
	if p == nil {
		t.Fatal("flatIn not planned")
	}
	inputs := []map[string]any{
		nil,
		{"s": "x", "i": 3.0, "i8": -5.0, "u": 7.0, "f": 1.5, "f32": 0.5, "b": true, "Def": "d", "-": "dash"},
		{"i": 3},
		{"i": int64(9)},
		{"i": 2.5},
		{"i8": 300.0},
		{"u": -1.0},
		{"u": -1},
		{"u": 70000.0},
		{"f": 3},
		{"f32": 0.1},
		{"f": math.Inf(1)},
		{"s": nil},
		{"s": 1.0},
		{"b": "true"},
		{"S": "case"},
		{"def": "case"},
		{"unknown": map[string]any{"x": 1.0}},
		{"Skip": "no", "priv": "no"},
		{"i": 1e300},
		{"s": "caf\xe9"}, // not UTF-8: encoding/json writes U+FFFD
		{"Def": "\xff\xfe"},
		{"s": "café"},
		{"caf\xe9": "x"},
	}
	decoded := 0
	for _, in := range inputs {
		var fast flatIn
		ok := p.decode(in, reflect.ValueOf(&fast).Elem())
		if ok {
			decoded++
		}
		var slow flatIn
		err := decodeInput(in, &slow)
		if ok && (err != nil || !reflect.DeepEqual(fast, slow)) {
			t.Errorf("input %#v: fast %#v, encoding/json %#v (%v)", in, fast, slow, err)
		}
	}
	if decoded < 5 {
		t.Errorf("the fast path decoded only %d inputs", decoded)
	}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[struct{ N []int }](),
		reflect.TypeFor[struct{ N *int }](),
		reflect.TypeFor[struct{ flatIn }](),
		reflect.TypeFor[struct {
			N int `json:"n,string"`
		}](),
		reflect.TypeFor[struct{ D Idempotency }](),
		reflect.TypeFor[int](),
		reflect.TypeFor[*flatIn](),
	} {
		if newFieldPlan(typ) != nil {
			t.Errorf("%v planned", typ)
		}
	}
}
