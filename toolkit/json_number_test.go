package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// usingNumbers decodes s as a Go caller does that keeps big integers
// exact: encoding/json's Decoder with UseNumber, every number a
// json.Number.
func usingNumbers(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestJSONNumberInputIsANumber: an Input a Go caller decoded with
// UseNumber holds json.Number values, which encoding/json writes as bare
// numbers: each passes the schema as the number it spells, at any depth,
// and reaches a typed tool's fields converted, an integer beyond ±2^53
// exact in an int64 or uint64 field; a raw tool gets the number as an
// int64 (a uint64 past int64) or a float64, and the caller's map is left as it was. A fraction or a number beyond the
// field's type ends invalid_input as the same number sent as a float64
// does, and a json.Number that spells no number (or none a float64
// holds) ends invalid_input saying where, before any tool runs.
func TestJSONNumberInputIsANumber(t *testing.T) {
	tk := newToolkit(t, nil)
	var ran int
	mustAdd(t, tk, toolkit.Func("flat", "Flat.", func(ctx context.Context, in wholeFlat) (string, error) {
		ran++
		return fmt.Sprintf("%d %d %d %d %d", in.N, in.I8, in.U16, in.I64, in.U64), nil
	}))
	mustAdd(t, tk, toolkit.Func("nested", "Nested.", func(ctx context.Context, in wholeNested) (string, error) {
		ran++
		return fmt.Sprintf("%d %v %v %d", *in.P, in.L, in.M, in.Sub.K), nil
	}))
	mustAdd(t, tk, toolkit.Func("floats", "Floats.", func(ctx context.Context, in struct {
		F float64   `json:"f"`
		G []float32 `json:"g,omitempty"`
	}) (string, error) {
		ran++
		return fmt.Sprint(in.F, in.G), nil
	}))
	var got map[string]any
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", objectSchema(map[string]any{
		"n":    map[string]any{"type": "integer"},
		"x":    map[string]any{"type": "number"},
		"any":  map[string]any{},
		"list": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
	}, "n"), func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		ran++
		got = call.Input
		return nil
	}))

	for _, tt := range []struct {
		tool, in, want string
	}{
		{"flat", `{"n": 3}`, "3 0 0 0 0"},
		{"flat", `{"n": 3.0, "i8": -128, "u16": 65535, "i64": 9007199254740993, "u64": 18446744073709551615}`,
			"3 -128 65535 9007199254740993 18446744073709551615"},
		{"flat", `{"n": -0, "i64": -9223372036854775808, "u64": 1.8e19}`, "0 0 0 -9223372036854775808 18000000000000000000"},
		{"nested", `{"p": 5, "l": [1, 2e0, 9007199254740993], "m": {"a": 7}, "sub": {"k": -2147483648}}`,
			"5 [1 2 9007199254740993] map[a:7] -2147483648"},
		{"floats", `{"f": 2.5, "g": [0.5, 1]}`, "2.5 [0.5 1]"},
		{"floats", `{"f": 12345678901234567890}`, "1.2345678901234567e+19 []"},
	} {
		in := usingNumbers(t, tt.in)
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: tt.tool, Input: in})
		if r.State != toolkit.StateSuccess || r.Text() != tt.want {
			t.Errorf("%s %s: %s %s %q, want %q", tt.tool, tt.in, r.State, r.Code, r.Text(), tt.want)
		}
	}

	in := usingNumbers(t, `{"n": 3, "x": 2.5, "any": {"deep": [1, 1e2, 9223372036854775808]}, "list": [9007199254740993, -4]}`)
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "raw", Input: in})
	if r.State != toolkit.StateSuccess {
		t.Fatalf("raw: %s %s %q", r.State, r.Code, r.Text())
	}
	want := map[string]any{"n": int64(3), "x": 2.5, "any": map[string]any{"deep": []any{int64(1), 100.0, uint64(9223372036854775808)}},
		"list": []any{int64(9007199254740993), int64(-4)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("raw tool's input %#v, want %#v", got, want)
	}
	if !reflect.DeepEqual(in, usingNumbers(t, `{"n": 3, "x": 2.5, "any": {"deep": [1, 1e2, 9223372036854775808]}, "list": [9007199254740993, -4]}`)) {
		t.Errorf("the caller's input was changed: %#v", in)
	}

	ran = 0
	const invalid = "Input validation failed for tool '"
	for _, tt := range []struct {
		tool string
		in   map[string]any
		want string
	}{
		{"flat", usingNumbers(t, `{"n": 3.5}`), `flat': validating /properties/n: type: 3.5 has type "number", want "integer"`},
		{"flat", usingNumbers(t, `{"n": 1, "i8": 128}`), `flat': validating /properties/i8: maximum: 128 is greater than 127`},
		{"flat", usingNumbers(t, `{"n": 1, "u16": -1}`), `flat': validating /properties/u16: minimum: -1 is less than 0`},
		{"flat", usingNumbers(t, `{"n": 9223372036854775808}`), `flat': json: cannot unmarshal number 9223372036854775808 into Go struct field wholeFlat.n of type int`},
		{"nested", usingNumbers(t, `{"p": 5, "l": [1, 2.5], "sub": {"k": 1}}`), `nested': validating /properties/l: validating /properties/l/items: type: 2.5 has type "number", want "integer"`},
		{"flat", map[string]any{"n": json.Number("abc")}, `flat': /n: json.Number "abc" is not a number`},
		{"flat", map[string]any{"n": json.Number("")}, `flat': /n: json.Number "" is not a number`},
		{"flat", map[string]any{"n": json.Number("0x10")}, `flat': /n: json.Number "0x10" is not a number`},
		{"flat", map[string]any{"n": json.Number(" 3")}, `flat': /n: json.Number " 3" is not a number`},
		{"flat", map[string]any{"n": json.Number("NaN")}, `flat': /n: json.Number "NaN" is not a number`},
		{"floats", map[string]any{"f": json.Number("1e400")}, `floats': /f: json.Number "1e400" is beyond a float64's range`},
		{"raw", map[string]any{"n": 1, "any": map[string]any{"a/b": []any{true, json.Number("1.")}}}, `raw': /any/a~1b/1: json.Number "1." is not a number`},
		{"raw", map[string]any{"n": 1, "any": json.Number(strings.Repeat("9", 100) + "x")}, `raw': /any: json.Number "` + strings.Repeat("9", 64) + `"… (37 more bytes) is not a number`},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: tt.tool, Input: tt.in})
		if r.Code != toolkit.CodeInvalidInput || r.Text() != invalid+tt.want {
			t.Errorf("%s %v: %s %q, want %q", tt.tool, tt.in, r.Code, r.Text(), invalid+tt.want)
		}
	}
	if ran != 0 {
		t.Errorf("a tool ran for %d refused inputs", ran)
	}
}

// TestInputHoldingItselfRefused: looking for json.Numbers follows an
// Input's nesting only so deep, so a map that holds itself (which no
// decoder gives) ends invalid_input instead of recursing without end.
func TestInputHoldingItselfRefused(t *testing.T) {
	tk := newToolkit(t, nil)
	ran := false
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", objectSchema(map[string]any{"self": map[string]any{}}), func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		ran = true
		return nil
	}))
	in := map[string]any{}
	in["self"] = []any{in, in}
	r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "raw", Input: in})
	if want := "Input validation failed for tool 'raw': the input is nested deeper than 10000"; r.Code != toolkit.CodeInvalidInput || r.Text() != want || ran {
		t.Errorf("%s %q (ran %v), want invalid_input %q", r.Code, r.Text(), ran, want)
	}
}

// TestInputSharingMapsWalkedOnce: an Input whose maps and slices are
// shared (in process; no decoder gives one), each level holding the next
// twice, is walked for json.Numbers once per map and slice, not once per
// path to it, which is 2^levels: the call runs, its numbers converted.
func TestInputSharingMapsWalkedOnce(t *testing.T) {
	for _, number := range []bool{false, true} {
		t.Run(fmt.Sprint("number=", number), func(t *testing.T) {
			tk := newToolkit(t, nil)
			var got map[string]any
			mustAdd(t, tk, toolkit.Raw("raw", "Raw.", objectSchema(map[string]any{"top": map[string]any{}}), func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				got = call.Input
				return nil
			}))
			leaf := map[string]any{"n": 3}
			if number {
				leaf["n"] = json.Number("3")
			}
			level := leaf
			const levels = 100
			for range levels {
				level = map[string]any{"a": level, "b": []any{level}}
			}
			r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "raw", Input: map[string]any{"top": level}})
			if r.Code != "" {
				t.Fatalf("%s %q, want success", r.Code, r.Text())
			}
			v := got["top"]
			for range levels {
				v = v.(map[string]any)["b"].([]any)[0]
			}
			want := any(3)
			if number {
				want = int64(3)
			}
			if n := v.(map[string]any)["n"]; n != want {
				t.Errorf("leaf n = %#v, want %#v", n, want)
			}
			if _, ok := leaf["n"].(json.Number); number && !ok {
				t.Errorf("the caller's leaf was written: n = %#v", leaf["n"])
			}
		})
	}
}
