package wire_test

import (
	"slices"
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
)

// TestInputShape: the keys of a request's input object in the order
// written (a key written twice at its first place) and those whose last
// value is a float, in either codec; nothing where there is no input
// object.
func TestInputShape(t *testing.T) {
	for _, tt := range []struct {
		name         string
		c            wire.Codec
		body         []byte
		keys, floats []string
	}{
		{"json", wire.JSON, []byte(`{"id":"1","input":{"b":1.0,"a":1,"c":-2e3,"d":"1.5"}}`), []string{"b", "a", "c", "d"}, []string{"b", "c"}},
		{"json key twice", wire.JSON, []byte(`{"input":{"b":1.5,"a":true,"b":2}}`), []string{"b", "a"}, nil},
		{"json input twice", wire.JSON, []byte(`{"input":{"x":1.5},"id":"1","input":{"y":1.5}}`), []string{"y"}, []string{"y"}},
		{"json no input", wire.JSON, []byte(`{"id":"1"}`), nil, nil},
		{"json null input", wire.JSON, []byte(`{"input":null}`), nil, nil},
		// {"id": "1", "input": {"b": 1.0 (float64), "a": 1, "c": 2.5 (float32)}}
		{"msgpack", wire.Msgpack, []byte("\x82\xa2id\xa11\xa5input\x83\xa1b\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00\xa1a\x01\xa1c\xca\x40\x20\x00\x00"), []string{"b", "a", "c"}, []string{"b", "c"}},
		// {"input": {"x": [1.5], "y": {"z": 1.5}}}: only top-level values count.
		{"msgpack nested", wire.Msgpack, []byte("\x81\xa5input\x82\xa1x\x91\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00\xa1y\x81\xa1z\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00"), []string{"x", "y"}, nil},
		{"msgpack nil input", wire.Msgpack, []byte("\x81\xa5input\xc0"), nil, nil},
		{"msgpack no input", wire.Msgpack, []byte("\x81\xa2id\xa11"), nil, nil},
	} {
		keys, floats := wire.InputShape(tt.c, tt.body)
		if !slices.Equal(keys, tt.keys) || !slices.Equal(floats, tt.floats) {
			t.Errorf("%s: %q %q, want %q %q", tt.name, keys, floats, tt.keys, tt.floats)
		}
	}
}
