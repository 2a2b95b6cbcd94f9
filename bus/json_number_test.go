package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

type numberIn struct {
	N   int      `json:"n"`
	I64 int64    `json:"i64,omitempty"`
	U64 uint64   `json:"u64,omitempty"`
	F   float64  `json:"f,omitempty"`
	L   []uint16 `json:"l,omitempty"`
	Sub *struct {
		K int64 `json:"k"`
	} `json:"sub,omitempty"`
}

// TestJSONNumberInputOverBus: a Go caller whose Input encoding/json
// decoded with UseNumber (every number a json.Number) calls tools over
// the bus, on the core path and the durable one: the client writes each
// json.Number, at any depth, as the number it spells (an integer as a
// msgpack integer, exact beyond ±2^53; any other number as a float64),
// so a typed tool gets its integers exact and a raw tool numbers, not
// strings; a json.Number that is not a number ends the call
// invalid_input at the client, saying why, and nothing runs.
func TestJSONNumberInputOverBus(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	var ran atomic.Int32
	mustAdd(t, tk, toolkit.Func("numbers", "Numbers.", func(ctx context.Context, in numberIn) (string, error) {
		ran.Add(1)
		k := int64(-1)
		if in.Sub != nil {
			k = in.Sub.K
		}
		return fmt.Sprintf("%d %d %d %v %v %d", in.N, in.I64, in.U64, in.F, in.L, k), nil
	}))
	mustAdd(t, tk, toolkit.Raw("rawnumbers", "Raw numbers.", map[string]any{
		"type": "object",
		"properties": map[string]any{
			"n":    map[string]any{"type": "integer"},
			"list": map[string]any{"type": "array", "items": map[string]any{"type": "number"}},
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
	usingNumbers := func(s string) map[string]any {
		t.Helper()
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, durable := range []bool{false, true} {
		for _, tt := range []struct {
			tool string
			in   map[string]any
			want string
			code toolkit.Code
		}{
			{"numbers", usingNumbers(`{"n": 3}`), "3 0 0 0 [] -1", ""},
			{"numbers", usingNumbers(`{"n": 3.0, "i64": -9007199254740993, "u64": 18446744073709551615, "f": 2.5, "l": [1, 1e2, 65535], "sub": {"k": 9223372036854775807}}`),
				"3 -9007199254740993 18446744073709551615 2.5 [1 100 65535] 9223372036854775807", ""},
			{"rawnumbers", usingNumbers(`{"n": -7, "list": [0, 0.5, 1E3, 9007199254740993, -9223372036854775809, 1e308], "x": {"y": [12]}}`),
				`{"list":[0,0.5,1000,9007199254740993,-9223372036854776000,1e+308],"n":-7,"x":{"y":[12]}}`, ""},
			{"numbers", usingNumbers(`{"n": 3.5}`), `Input validation failed for tool 'numbers': validating /properties/n: type: 3.5 has type "number", want "integer"`, toolkit.CodeInvalidInput},
			{"numbers", usingNumbers(`{"n": 1, "l": [65536]}`), `Input validation failed for tool 'numbers': validating /properties/l: validating /properties/l/items: maximum: 65536 is greater than 65535`, toolkit.CodeInvalidInput},
		} {
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: tt.tool, Durable: durable, Input: tt.in})
			if r.Code != tt.code || r.Text() != tt.want {
				t.Errorf("durable %v, %s %v: %s %q, want %q %q", durable, tt.tool, tt.in, r.Code, r.Text(), tt.code, tt.want)
			}
		}

		ran.Store(0)
		for _, tt := range []struct {
			in   map[string]any
			want string
		}{
			{map[string]any{"n": json.Number("abc")}, `json.Number "abc" is not a number`},
			{map[string]any{"n": 1, "sub": map[string]any{"k": []any{json.Number("0x10")}}}, `json.Number "0x10" is not a number`},
			{map[string]any{"n": 1, "f": json.Number("1e400")}, `json.Number "1e400" is beyond a float64's range`},
		} {
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "numbers", Durable: durable, Input: tt.in})
			if want := "BadRequestError: the input cannot be encoded: " + tt.want; r.Code != toolkit.CodeInvalidInput || r.Text() != want {
				t.Errorf("durable %v, %v: %s %q, want invalid_input %q", durable, tt.in, r.Code, r.Text(), want)
			}
		}
		if n := ran.Load(); n != 0 {
			t.Errorf("durable %v: a tool ran for %d inputs the client refused", durable, n)
		}
	}
}
