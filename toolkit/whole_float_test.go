package toolkit_test

import (
	"context"
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
