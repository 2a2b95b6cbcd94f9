package toolkit_test

import (
	"context"
	"math"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

type nonFiniteOut struct {
	Name  string             `json:"name"`
	Score float64            `json:"score"`
	Low   float32            `json:"low"`
	Ptr   *float64           `json:"ptr,omitempty"`
	Rest  map[string]float64 `json:"rest"`
}

// TestNonFiniteFloatNestedAsPython: a NaN or an infinity inside a Func's
// map, slice or struct result is written as AgentScope's json.dumps
// writes it there (NaN, Infinity, -Infinity as bare words), as one
// alone is, where the call ended tool_error with the JSON encoder's
// error; the result the tool returned is not changed, a string that
// spells such a word stays a string, and a finite float next to them
// is written as before.
func TestNonFiniteFloatNestedAsPython(t *testing.T) {
	inf := math.Inf(1)
	out := nonFiniteOut{Name: "NaN Infinity 5e-324", Score: math.NaN(), Low: float32(math.Inf(-1)), Ptr: &inf,
		Rest: map[string]float64{"a": 0.5, "b": math.Inf(-1), "Infinity": 5e-324}}
	list := []any{1.5, math.NaN(), map[string]any{"x": []float64{math.Inf(1)}}, "NaN"}
	for _, tt := range []struct {
		v    any
		want string
	}{
		{map[string]any{"x": math.NaN()}, `{"x": NaN}`},
		{[]float64{math.Inf(1), -2, math.Inf(-1)}, `[Infinity, -2, -Infinity]`},
		{[]float32{float32(math.Inf(1)), 1e-45}, `[Infinity, 1e-45]`},
		{list, `[1.5, NaN, {"x": [Infinity]}, "NaN"]`},
		{out, `{"name": "NaN Infinity 5e-324", "score": NaN, "low": -Infinity, "ptr": Infinity, "rest": {"Infinity": 5e-324, "a": 0.5, "b": -Infinity}}`},
		{&out, `{"name": "NaN Infinity 5e-324", "score": NaN, "low": -Infinity, "ptr": Infinity, "rest": {"Infinity": 5e-324, "a": 0.5, "b": -Infinity}}`},
	} {
		c, err := toolkit.ValueChunk(tt.v)
		if err != nil || len(c.Content) != 1 || c.Content[0].Text != tt.want {
			t.Errorf("ValueChunk(%#v) = %+v, %v; want text %q", tt.v, c.Content, err, tt.want)
		}
	}
	if !math.IsNaN(out.Score) || !math.IsInf(*out.Ptr, 1) || !math.IsInf(out.Rest["b"], -1) || !math.IsNaN(list[1].(float64)) {
		t.Errorf("the result was changed: %#v %#v", out, list)
	}

	tk := newToolkit(t, nil)
	mustAdd(t, tk, toolkit.Func("nested", "N.", func(ctx context.Context, in struct{}) (map[string]any, error) {
		return map[string]any{"mean": math.NaN(), "max": math.Inf(1)}, nil
	}))
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "1", Name: "nested"}); r.State != toolkit.StateSuccess || r.Text() != `{"max": Infinity, "mean": NaN}` {
		t.Errorf("nested: %s %s %q, want success %q", r.State, r.Code, r.Text(), `{"max": Infinity, "mean": NaN}`)
	}

	// Where the word cannot be told from the value (a float that spells
	// the stand-in a NaN is written as first, a `json:",string"` float),
	// or the value holds itself, the encoder's error is returned as before.
	type quoted struct {
		F float64 `json:"f,string"`
	}
	self := map[string]any{"n": math.NaN()}
	self["self"] = self
	for _, v := range []any{
		map[string]any{"n": math.NaN(), "x": math.Float64frombits(0x000FFFFFFFFFFFF1)},
		quoted{math.NaN()},
		self,
	} {
		if c, err := toolkit.ValueChunk(v); err == nil {
			t.Errorf("ValueChunk(%T) = %q, want the encoder's error", v, c.Content)
		}
	}
}

// TestNonFiniteFloatInIgnoredField: a struct field JSON leaves out
// (`json:"-"`) holding a NaN or an infinity does not keep the ones
// written from being written as json.dumps writes them: the result is
// the value without that field, as encoding/json writes it, where the
// call ended tool_error with the JSON encoder's error.
func TestNonFiniteFloatInIgnoredField(t *testing.T) {
	type stats struct {
		Mean  float64   `json:"mean"`
		Cache float64   `json:"-"`
		Seen  []float64 `json:"-"`
		Dash  float64   `json:"-,"`
	}
	for _, tt := range []struct {
		v    any
		want string
	}{
		{stats{Mean: math.NaN(), Cache: math.NaN()}, `{"mean": NaN, "-": 0}`},
		{[]stats{{Mean: math.Inf(1), Seen: []float64{math.Inf(-1)}, Dash: math.NaN()}}, `[{"mean": Infinity, "-": NaN}]`},
		{map[string]any{"s": &stats{Mean: 1, Cache: math.Inf(1)}, "n": math.NaN()}, `{"n": NaN, "s": {"mean": 1, "-": 0}}`},
	} {
		c, err := toolkit.ValueChunk(tt.v)
		if err != nil || len(c.Content) != 1 || c.Content[0].Text != tt.want {
			t.Errorf("ValueChunk(%#v) = %+v, %v; want text %q", tt.v, c.Content, err, tt.want)
		}
	}
}
