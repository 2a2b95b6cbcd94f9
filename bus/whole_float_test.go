package bus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

type wholeIn struct {
	N   int    `json:"n"`
	I8  int8   `json:"i8,omitempty"`
	L   []uint `json:"l,omitempty"`
	Sub *struct {
		K int32 `json:"k"`
	} `json:"sub,omitempty"`
}

// TestWholeFloatInputOverBus: a Go caller whose input encoding/json
// decoded (every number a float64, sent as a msgpack float) calls a tool
// whose parameters are integers, on the core path and the durable one,
// and a JSON request writes 3.0: the tool gets the integers, converted
// to its Go types, and a fraction or a number outside the Go type's
// range ends the call invalid_input, saying why.
func TestWholeFloatInputOverBus(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("sized", "Sized.", func(ctx context.Context, in wholeIn) (string, error) {
		k := int32(-1)
		if in.Sub != nil {
			k = in.Sub.K
		}
		return fmt.Sprintf("%d %d %v %d", in.N, in.I8, in.L, k), nil
	}))
	durableWorker(t, s, tk, 0, "w1")
	nc := natstest.Connect(t, s)
	c := newClient(t, nc, nil)
	decoded := func(s string) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, durable := range []bool{false, true} {
		for _, tt := range []struct {
			in, want string
			code     toolkit.Code
		}{
			{`{"n": 3.0}`, "3 0 [] -1", ""},
			{`{"n": 3.0, "i8": -128.0, "l": [1.0, 2e0], "sub": {"k": 4.0}}`, "3 -128 [1 2] 4", ""},
			{`{"n": 3.5}`, `Input validation failed for tool 'sized': validating /properties/n: type: 3.5 has type "number", want "integer"`, toolkit.CodeInvalidInput},
			{`{"n": 1, "i8": 200.0}`, `Input validation failed for tool 'sized': validating /properties/i8: maximum: 200 is greater than 127`, toolkit.CodeInvalidInput},
			{`{"n": 1, "l": [-1.0]}`, `Input validation failed for tool 'sized': validating /properties/l: validating /properties/l/items: minimum: -1 is less than 0`, toolkit.CodeInvalidInput},
		} {
			r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "sized", Durable: durable, Input: decoded(tt.in)})
			if r.Code != tt.code || r.Text() != tt.want {
				t.Errorf("durable %v, %s: %s %q, want %q %q", durable, tt.in, r.Code, r.Text(), tt.code, tt.want)
			}
		}
	}

	// A JSON request, as a client in another language writes one.
	m, err := nc.RequestMsg(&nats.Msg{Subject: wire.CallSubject("sized", ""), Header: nats.Header{"Content-Type": {wire.ContentTypeJSON}},
		Data: []byte(`{"id": "j1", "input": {"n": 3.0, "l": [5.0], "sub": {"k": -7.0}}}`)}, guard)
	if err != nil {
		t.Fatal(err)
	}
	var f wire.Frame
	if err := wire.JSON.Unmarshal(m.Data, &f); err != nil || f.Final == nil {
		t.Fatalf("reply %q: %v", m.Data, err)
	}
	if f.Final.State != toolkit.StateSuccess || f.Final.Text() != "3 0 [5] -7" {
		t.Errorf("JSON request: %s %s %q, want success %q", f.Final.State, f.Final.Code, f.Final.Text(), "3 0 [5] -7")
	}
}
