package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// typedContainers is a typed tool's input of the slices and maps a Go
// caller builds.
type typedContainers struct {
	S   []string          `json:"s,omitempty"`
	I   []int             `json:"i,omitempty"`
	I64 []int64           `json:"i64,omitempty"`
	F   []float64         `json:"f,omitempty"`
	MS  map[string]string `json:"ms,omitempty"`
	MI  map[string]int    `json:"mi,omitempty"`
	LM  []map[string]int  `json:"lm,omitempty"`
}

func (in typedContainers) String() string {
	return fmt.Sprint(in.S, in.I, in.I64, in.F, in.MS, in.MI, in.LM)
}

// TestJSONNumberInTypedContainers: an Input may hold the typed slices
// and maps a Go caller builds ([]string, []int, map[string]int,
// []map[string]any, ...), and json.Numbers inside them ([]json.Number,
// map[string]json.Number, a json.Number in a []map[string]any): each
// reaches a typed tool's fields, and passes a raw tool's schema, as the
// same values in []any and map[string]any do, a json.Number as the
// number it spells, exact beyond ±2^53. A raw tool's Call.Input holds no
// json.Number; the caller's containers are left as they were. A
// json.Number in a typed container that is not a number ends
// invalid_input saying where, a typed container holding itself through
// an interface is refused as a map holding itself is, and shared ones are
// walked once each.
func TestJSONNumberInTypedContainers(t *testing.T) {
	tk := newToolkit(t, nil)
	var ran int
	mustAdd(t, tk, toolkit.Func("typed", "Typed.", func(ctx context.Context, in typedContainers) (string, error) {
		ran++
		return in.String(), nil
	}))
	var got map[string]any
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", objectSchema(map[string]any{
		"i":  map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
		"m":  map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}},
		"lm": map[string]any{"type": "array", "items": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "number"}}},
		"a":  map[string]any{},
	}), func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		ran++
		got = call.Input
		return nil
	}))

	for _, tt := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"s": []string{"a", "b"}}, "[a b] [] [] [] map[] map[] []"},
		{map[string]any{"i": []int{1, -2}, "f": []float64{0.5, 3}}, "[] [1 -2] [] [0.5 3] map[] map[] []"},
		{map[string]any{"ms": map[string]string{"k": "v"}, "mi": map[string]int{"k": 7}}, "[] [] [] [] map[k:v] map[k:7] []"},
		{map[string]any{"lm": []map[string]any{{"k": 1}}}, "[] [] [] [] map[] map[] [map[k:1]]"},
		{map[string]any{"i": []json.Number{"1", "2.0"}}, "[] [1 2] [] [] map[] map[] []"},
		{map[string]any{"i64": []json.Number{"9007199254740993"}, "f": []json.Number{"0.5"}}, "[] [] [9007199254740993] [0.5] map[] map[] []"},
		{map[string]any{"mi": map[string]json.Number{"k": "9"}}, "[] [] [] [] map[] map[k:9] []"},
		{map[string]any{"lm": []map[string]any{{"k": json.Number("4")}}}, "[] [] [] [] map[] map[] [map[k:4]]"},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "typed", Input: tt.in})
		if r.State != toolkit.StateSuccess || r.Text() != tt.want {
			t.Errorf("typed %#v: %s %s %q, want %q", tt.in, r.State, r.Code, r.Text(), tt.want)
		}
	}

	in := map[string]any{
		"i":  []json.Number{"9007199254740993", "-4"},
		"m":  map[string]json.Number{"k": "5"},
		"lm": []map[string]any{{"x": json.Number("2.5")}, {"y": 1}},
		"a":  []map[string][]json.Number{{"z": {"18446744073709551615"}}},
	}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "raw", Input: in})
	if r.State != toolkit.StateSuccess {
		t.Fatalf("raw: %s %s %q", r.State, r.Code, r.Text())
	}
	want := map[string]any{
		"i":  []any{int64(9007199254740993), int64(-4)},
		"m":  map[string]any{"k": int64(5)},
		"lm": []any{map[string]any{"x": 2.5}, map[string]any{"y": 1}},
		"a":  []any{map[string]any{"z": []any{uint64(18446744073709551615)}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("raw tool's input %#v, want %#v", got, want)
	}
	if n := in["lm"].([]map[string]any)[0]["x"]; n != json.Number("2.5") {
		t.Errorf("the caller's map was changed: x = %#v", n)
	}
	if n := in["i"].([]json.Number)[0]; n != "9007199254740993" {
		t.Errorf("the caller's slice was changed: %#v", n)
	}
	plain := map[string]any{"i": []int{1}, "m": map[string]int{"k": 1}}
	r = tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "raw", Input: plain})
	if r.State != toolkit.StateSuccess || !reflect.DeepEqual(got, plain) {
		t.Errorf("raw tool's input %#v (%s %q), want %#v as given", got, r.Code, r.Text(), plain)
	}

	// Shared typed containers, each level holding the next twice, are
	// walked once each, not once per path (2^levels).
	level := []map[string]any{{"n": json.Number("3")}}
	for range 100 {
		level = []map[string]any{{"a": level, "b": level}}
	}
	r = tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "raw", Input: map[string]any{"a": level}})
	if r.Code != "" {
		t.Fatalf("shared levels: %s %q, want success", r.Code, r.Text())
	}
	v := got["a"]
	for range 100 {
		v = v.([]any)[0].(map[string]any)["b"]
	}
	if n := v.([]any)[0].(map[string]any)["n"]; n != int64(3) {
		t.Errorf("shared levels: leaf n = %#v, want int64(3)", n)
	}

	ran = 0
	self := []map[string]any{{}}
	self[0]["self"] = self
	const invalid = "Input validation failed for tool '"
	for _, tt := range []struct {
		tool string
		in   map[string]any
		want string
	}{
		{"typed", map[string]any{"i": []json.Number{"1", "abc"}}, `typed': /i/1: json.Number "abc" is not a number`},
		{"typed", map[string]any{"mi": map[string]json.Number{"a/b": "1e400"}}, `typed': /mi/a~1b: json.Number "1e400" is beyond a float64's range`},
		{"raw", map[string]any{"lm": []map[string]any{{"x": json.Number("0x1")}}}, `raw': /lm/0/x: json.Number "0x1" is not a number`},
		{"typed", map[string]any{"i": []json.Number{"2.5"}}, `typed': validating /properties/i: validating /properties/i/items: type: 2.5 has type "number", want "integer"`},
		{"raw", map[string]any{"a": self}, `raw': the input is nested deeper than 10000`},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: tt.tool, Input: tt.in})
		if r.Code != toolkit.CodeInvalidInput || r.Text() != invalid+tt.want {
			t.Errorf("%s: %s %q, want %q", tt.tool, r.Code, r.Text(), invalid+tt.want)
		}
	}
	if ran != 0 {
		t.Errorf("a tool ran for %d refused inputs", ran)
	}
}

// TestNumberValuesHoldingItself: NumberValues refuses a typed slice or
// map that holds itself with ErrNestedTooDeep, which says "the value",
// not "the input", as its caller may be writing a tool's output.
func TestNumberValuesHoldingItself(t *testing.T) {
	self := []map[string]any{{}}
	self[0]["self"] = self
	if _, err := toolkit.NumberValues(self); !errors.Is(err, toolkit.ErrNestedTooDeep) || err.Error() != "toolkit: the value is nested deeper than 10000" {
		t.Errorf("NumberValues of a slice holding itself: %v, want %v", err, toolkit.ErrNestedTooDeep)
	}
}
