package toolkit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// TestBoundsWrittenAsJSONWrites: a number a bound refuses, and the bound,
// are written as JSON writes them: an int32 field given 3000000000 was
// told "maximum: 3e+09 is greater than 2.147483647e+09".
func TestBoundsWrittenAsJSONWrites(t *testing.T) {
	type sizes struct {
		I32 int32  `json:"i32,omitempty"`
		U32 uint32 `json:"u32,omitempty"`
	}
	tk := newToolkit(t, nil)
	if err := tk.Add(toolkit.Func("sizes", "Sizes.", func(ctx context.Context, in sizes) (sizes, error) { return in, nil })); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Raw("budget", "Budget.", map[string]any{"type": "object", "properties": map[string]any{
		"n": map[string]any{"type": "number", "maximum": 1e6},
	}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil })); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		tool string
		in   map[string]any
		want string
	}{
		{"sizes", map[string]any{"i32": 3e9}, "validating /properties/i32: maximum: 3000000000 is greater than 2147483647"},
		{"sizes", map[string]any{"i32": -3e9}, "validating /properties/i32: minimum: -3000000000 is less than -2147483648"},
		{"sizes", map[string]any{"u32": int64(5000000000)}, "validating /properties/u32: maximum: 5000000000 is greater than 4294967295"},
		{"budget", map[string]any{"n": 1234567.5}, "validating /properties/n: maximum: 1234567.5 is greater than 1000000"},
		{"budget", map[string]any{"n": 1e22}, "validating /properties/n: maximum: 1e+22 is greater than 1000000"},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: tt.tool, Input: tt.in})
		if want := "Input validation failed for tool '" + tt.tool + "': " + tt.want; r.Code != toolkit.CodeInvalidInput || r.Text() != want {
			t.Errorf("%v: %s %q, want %q", tt.in, r.Code, r.Text(), want)
		}
	}
}

// TestTypeMessageWritesNumbersAsJSON: a number of the wrong type is
// written in the message as JSON writes it: 1500000.5 sent for an
// integer was told "type: 1.5000005e+06 has type "number"".
func TestTypeMessageWritesNumbersAsJSON(t *testing.T) {
	tk := newToolkit(t, nil)
	if err := tk.Add(toolkit.Raw("typed", "Typed.", map[string]any{"type": "object", "properties": map[string]any{
		"n": map[string]any{"type": "integer"},
		"s": map[string]any{"type": "string"},
		"o": map[string]any{"type": []any{"string", "null"}},
	}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error { return nil })); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		in   map[string]any
		want string
	}{
		{map[string]any{"n": 1500000.5}, `validating /properties/n: type: 1500000.5 has type "number", want "integer"`},
		{map[string]any{"n": -2.5e-7}, `validating /properties/n: type: -2.5e-7 has type "number", want "integer"`},
		{map[string]any{"s": 3e9}, `validating /properties/s: type: 3000000000 has type "integer", want "string"`},
		{map[string]any{"s": 1e21}, `validating /properties/s: type: 1e+21 has type "integer", want "string"`},
		{map[string]any{"o": 2.5e6}, `validating /properties/o: type: 2500000 has type "integer", want one of "string, null"`},
		{map[string]any{"n": "1e+06"}, `validating /properties/n: type: 1e+06 has type "string", want "integer"`},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "typed", Input: tt.in})
		if want := "Input validation failed for tool 'typed': " + tt.want; r.Code != toolkit.CodeInvalidInput || r.Text() != want {
			t.Errorf("%v: %s %q, want %q", tt.in, r.Code, r.Text(), want)
		}
	}
}

// wholeFlat is decoded field by field (the flat struct's fast path),
// wholeNested by encoding/json.
type wholeFlat struct {
	N   int    `json:"n"`
	I8  int8   `json:"i8,omitempty"`
	U16 uint16 `json:"u16,omitempty"`
	I64 int64  `json:"i64,omitempty"`
	U64 uint64 `json:"u64,omitempty"`
}

type wholeNested struct {
	P   *int            `json:"p"`
	L   []int           `json:"l,omitempty"`
	M   map[string]uint `json:"m,omitempty"`
	Sub struct {
		K int32 `json:"k"`
	} `json:"sub"`
}

// TestWholeFloatTakenAsInteger: a number with no fraction is an integer
// (JSON Schema's "integer", pydantic's lax int), however the caller's
// decoder held it: {"n": 3.0} decoded by encoding/json into a map (a
// float64 3), a float32, or the model's text 3.0 reaches a function's
// int parameter as 3, in nested values too, up to the edges of float64's
// exact integers and of the Go type. A fraction, NaN, ±Inf and a number
// outside the Go type's range end the call invalid_input, saying why,
// before the function runs.
func TestWholeFloatTakenAsInteger(t *testing.T) {
	tk := newToolkit(t, nil)
	var ran int
	if err := tk.Add(toolkit.Func("flat", "Flat.", func(ctx context.Context, in wholeFlat) (string, error) {
		ran++
		return fmt.Sprintf("%d %d %d %d %d", in.N, in.I8, in.U16, in.I64, in.U64), nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Func("nested", "Nested.", func(ctx context.Context, in wholeNested) (string, error) {
		ran++
		return fmt.Sprintf("%d %v %v %d", *in.P, in.L, in.M, in.Sub.K), nil
	})); err != nil {
		t.Fatal(err)
	}
	decoded := func(s string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tt := range []struct {
		tool string
		in   map[string]any
		raw  string
		want string
	}{
		{tool: "flat", in: decoded(`{"n": 3.0}`), want: "3 0 0 0 0"},
		{tool: "flat", in: map[string]any{"n": float32(3)}, want: "3 0 0 0 0"},
		{tool: "flat", raw: `{"n": 3.0, "i8": -1e2}`, want: "3 -100 0 0 0"},
		{tool: "flat", in: decoded(`{"n": -0.0, "i8": -128.0, "u16": 65535.0, "i64": 9007199254740992.0, "u64": 1.8e19}`),
			want: "0 -128 65535 9007199254740992 18000000000000000000"},
		{tool: "flat", in: decoded(`{"n": 1, "i64": -9007199254740992.0}`), want: "1 0 0 -9007199254740992 0"},
		{tool: "nested", in: decoded(`{"p": 5.0, "l": [1.0, 2e0], "m": {"a": 7.0}, "sub": {"k": 4.0}}`), want: "5 [1 2] map[a:7] 4"},
		{tool: "nested", raw: `{"p": 5.0, "sub": {"k": -2147483648.0}}`, want: "5 [] map[] -2147483648"},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: tt.tool, Input: tt.in, RawInput: tt.raw})
		if r.State != toolkit.StateSuccess || r.Text() != tt.want {
			t.Errorf("%s %v%s: %s %s %q, want %q", tt.tool, tt.in, tt.raw, r.State, r.Code, r.Text(), tt.want)
		}
	}

	ran = 0
	const invalid = "Input validation failed for tool '"
	for _, tt := range []struct {
		tool string
		in   map[string]any
		want string
	}{
		{"flat", decoded(`{"n": 3.5}`), `flat': validating /properties/n: type: 3.5 has type "number", want "integer"`},
		{"flat", map[string]any{"n": float32(0.5)}, `flat': validating /properties/n: type: 0.5 has type "number", want "integer"`},
		{"flat", map[string]any{"n": math.NaN()}, `flat': validating /properties/n: type: NaN has type "number", want "integer"`},
		{"flat", map[string]any{"n": math.Inf(1)}, `flat': validating /properties/n: type: +Inf has type "number", want "integer"`},
		{"flat", map[string]any{"n": math.Inf(-1)}, `flat': validating /properties/n: type: -Inf has type "number", want "integer"`},
		{"flat", decoded(`{"n": 1, "i8": 128.0}`), `flat': validating /properties/i8: maximum: 128 is greater than 127`},
		{"flat", decoded(`{"n": 1, "u16": -1.0}`), `flat': validating /properties/u16: minimum: -1 is less than 0`},
		{"flat", decoded(`{"n": 1, "u16": 65536.0}`), `flat': validating /properties/u16: maximum: 65536 is greater than 65535`},
		{"flat", decoded(`{"n": 1e19}`), `flat': json: cannot unmarshal number 10000000000000000000 into Go struct field wholeFlat.n of type int`},
		{"flat", decoded(`{"n": 1, "i64": 9.3e18}`), `flat': json: cannot unmarshal number 9300000000000000000 into Go struct field wholeFlat.i64 of type int64`},
		{"flat", decoded(`{"n": 1, "u64": 1.9e19}`), `flat': json: cannot unmarshal number 19000000000000000000 into Go struct field wholeFlat.u64 of type uint64`},
		{"flat", decoded(`{"n": 1e300}`), `flat': json: cannot unmarshal number 1e+300 into Go struct field wholeFlat.n of type int`},
		{"nested", decoded(`{"p": 5.0, "l": [1.0, 2.5], "sub": {"k": 1}}`), `nested': validating /properties/l: validating /properties/l/items: type: 2.5 has type "number", want "integer"`},
		{"nested", decoded(`{"p": 5.0, "sub": {"k": 3e9}}`), `nested': validating /properties/sub: validating /properties/sub/properties/k: maximum: 3000000000 is greater than 2147483647`},
	} {
		r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: tt.tool, Input: tt.in})
		if r.Code != toolkit.CodeInvalidInput || r.Text() != invalid+tt.want {
			t.Errorf("%s %v: %s %q, want %q", tt.tool, tt.in, r.Code, r.Text(), invalid+tt.want)
		}
	}
	if ran != 0 {
		t.Errorf("the function ran for %d refused inputs", ran)
	}
}
