package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

type typedContainersIn struct {
	S   []string          `json:"s,omitempty"`
	I   []int             `json:"i,omitempty"`
	I64 []int64           `json:"i64,omitempty"`
	F   []float64         `json:"f,omitempty"`
	MS  map[string]string `json:"ms,omitempty"`
	MI  map[string]int    `json:"mi,omitempty"`
	LM  []map[string]int  `json:"lm,omitempty"`
}

// TestTypedContainersOverBus: the typed slices and maps a Go caller
// builds ([]string, []int, []float64, map[string]string,
// map[string]int, []map[string]any) reach a tool over the bus, on the
// core path and the durable one, as they do in process, and so do
// json.Numbers inside them ([]json.Number, map[string]json.Number, one
// in a []map[string]any): written as the numbers they spell, exact
// beyond ±2^53, not as strings. One that is not a number, or a typed
// container holding itself, ends the call invalid_input at the client,
// and nothing runs.
func TestTypedContainersOverBus(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	var ran atomic.Int32
	mustAdd(t, tk, toolkit.Func("typed", "Typed.", func(ctx context.Context, in typedContainersIn) (string, error) {
		ran.Add(1)
		return fmt.Sprint(in.S, in.I, in.I64, in.F, in.MS, in.MI, in.LM), nil
	}))
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"i": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}},
			"m": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}},
			"a": map[string]any{},
		},
	}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		ran.Add(1)
		b, err := json.Marshal(call.Input)
		if err != nil {
			return err
		}
		return w.Write(toolkit.Text(string(b)))
	}))
	durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, natstest.Connect(t, s), nil)
	self := []map[string]any{{}}
	self[0]["self"] = self
	for _, durable := range []bool{false, true} {
		for _, tt := range []struct {
			tool string
			in   map[string]any
			want string
		}{
			{"typed", map[string]any{"s": []string{"a", "b"}, "i": []int{1, -2}, "f": []float64{0.5, 3}}, "[a b] [1 -2] [] [0.5 3] map[] map[] []"},
			{"typed", map[string]any{"ms": map[string]string{"k": "v"}, "mi": map[string]int{"k": 7}, "lm": []map[string]any{{"k": 1}}}, "[] [] [] [] map[k:v] map[k:7] [map[k:1]]"},
			{"typed", map[string]any{"i": []json.Number{"1", "2.0"}, "i64": []json.Number{"9007199254740993"}, "f": []json.Number{"0.5"}}, "[] [1 2] [9007199254740993] [0.5] map[] map[] []"},
			{"typed", map[string]any{"mi": map[string]json.Number{"k": "9"}, "lm": []map[string]any{{"k": json.Number("4")}}}, "[] [] [] [] map[] map[k:9] [map[k:4]]"},
			{"raw", map[string]any{"i": []json.Number{"9007199254740993"}, "m": map[string]json.Number{"k": "5"}, "a": []map[string][]json.Number{{"z": {"2.5"}}}},
				`{"a":[{"z":[2.5]}],"i":[9007199254740993],"m":{"k":5}}`},
		} {
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: tt.tool, Durable: durable, Input: tt.in})
			if r.State != toolkit.StateSuccess || r.Text() != tt.want {
				t.Errorf("durable %v, %s %#v: %s %s %q, want %q", durable, tt.tool, tt.in, r.State, r.Code, r.Text(), tt.want)
			}
		}

		ran.Store(0)
		for _, tt := range []struct {
			in   map[string]any
			want string
		}{
			{map[string]any{"i": []json.Number{"1", "abc"}}, `json.Number "abc" is not a number`},
			{map[string]any{"lm": []map[string]any{{"k": json.Number("1e400")}}}, `json.Number "1e400" is beyond a float64's range`},
			{map[string]any{"lm": self}, `msgpack: the value is nested deeper than 10000`},
		} {
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "typed", Durable: durable, Input: tt.in})
			if want := "BadRequestError: the input cannot be encoded: " + tt.want; r.Code != toolkit.CodeInvalidInput || r.Text() != want {
				t.Errorf("durable %v: %s %q, want invalid_input %q", durable, r.Code, r.Text(), want)
			}
		}
		if n := ran.Load(); n != 0 {
			t.Errorf("durable %v: a tool ran for %d inputs the client refused", durable, n)
		}
	}
}

// TestInputHoldingItselfOverBus: a call whose Input holds itself through
// its maps and slices (in process; no decoder gives one) ends
// invalid_input at the client, where its encoder recursed until the
// stack overflowed and the caller's process died; nothing runs.
func TestInputHoldingItselfOverBus(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	var ran atomic.Int32
	mustAdd(t, tk, toolkit.Raw("raw", "Raw.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		ran.Add(1)
		return nil
	}))
	serve(t, natstest.Connect(t, s), tk, nil)
	c := newClient(t, natstest.Connect(t, s), nil)
	in := map[string]any{}
	in["self"] = []any{in}
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "raw", Input: in})
	if want := "BadRequestError: the input cannot be encoded: msgpack: the value is nested deeper than 10000"; r.Code != toolkit.CodeInvalidInput || r.Text() != want {
		t.Errorf("%s %q, want invalid_input %q", r.Code, r.Text(), want)
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "raw", Input: map[string]any{"ok": []any{map[string]any{}}}}); r.State != toolkit.StateSuccess {
		t.Errorf("a call after it: %s %s %q", r.State, r.Code, r.Text())
	}
	if n := ran.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1 (the call after)", n)
	}
}
