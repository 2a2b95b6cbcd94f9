package wire_test

import (
	"strings"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
)

// TestRequestID: a request's call id is read wherever the body puts it,
// past an input of any shape, in either codec; a body without one, or
// one that cannot be read, gives "".
func TestRequestID(t *testing.T) {
	req := &wire.Request{ID: "call-1", Input: map[string]any{"text": strings.Repeat("x", 70_000), "list": []any{1, "a", map[string]any{"b": 2.5}}}, Session: "s", More: true}
	for _, c := range []wire.Codec{wire.Msgpack, wire.JSON} {
		data, err := c.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := wire.RequestID(c, data); got != "call-1" {
			t.Errorf("%s: RequestID = %q, want call-1", c, got)
		}
		none, err := c.Marshal(&wire.Request{Input: map[string]any{"id": "not-this"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := wire.RequestID(c, none); got != "" {
			t.Errorf("%s: a body without an id: RequestID = %q", c, got)
		}
		if got := wire.RequestID(c, data[:len(data)/2]); got != "" && c == wire.JSON {
			t.Errorf("%s: a cut body: RequestID = %q", c, got)
		}
	}
	// The msgpack id after the input: the input is walked, not decoded.
	mp := []byte{0x82, 0xa5, 'i', 'n', 'p', 'u', 't', 0x81, 0xa1, 'a', 0x91, 0x01, 0xa2, 'i', 'd', 0xa1, 'z'}
	if got := wire.RequestID(wire.Msgpack, mp); got != "z" {
		t.Errorf("msgpack id after the input: %q", got)
	}
	for _, bad := range [][]byte{nil, {0xc1}, {0x81, 0xa2, 'i', 'd'}, []byte("{\"id\":"), {0x82, 0xa1, 'x', 0xdd, 0xff, 0xff, 0xff, 0xff}} {
		for _, c := range []wire.Codec{wire.Msgpack, wire.JSON} {
			if got := wire.RequestID(c, bad); got != "" {
				t.Errorf("%s % x: RequestID = %q", c, bad, got)
			}
		}
	}
}
