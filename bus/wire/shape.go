package wire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// InputShape reads what a decoded Request's Input, a map, no longer
// holds from the request's body data, in codec c: the keys of its input
// object in the order they were written (each at its first place, as a
// Python dict keeps a key written twice), and those whose value (the
// last written) is a floating-point number: a msgpack float, a JSON
// number written with a point or an exponent. See toolkit.ToolCall's
// InputKeys and InputFloats. Both are nil when data holds no input
// object; data is a body c decoded without error.
func InputShape(c Codec, data []byte) (keys, floats []string) {
	var fields []inputField
	if c == JSON {
		fields = jsonInputFields(data)
	} else {
		fields = msgpackInputFields(data)
	}
	last := make(map[string]bool, len(fields))
	for _, f := range fields {
		if _, seen := last[f.key]; !seen {
			keys = append(keys, f.key)
		}
		last[f.key] = f.float
	}
	for _, k := range keys {
		if last[k] {
			floats = append(floats, k)
		}
	}
	return keys, floats
}

type inputField struct {
	key   string
	float bool
}

// msgpackInputFields are the entries of a msgpack request's input map
// (the last one written, which the decoder keeps).
func msgpackInputFields(data []byte) []inputField {
	d := decoder{b: data, left: Budget(len(data))}
	n, err := d.mapLen()
	at := -1
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, err = d.rawStr(); err != nil {
			break
		}
		if string(k) == "input" {
			at = d.i
		}
		err = d.skipValue()
	}
	if at < 0 {
		return nil
	}
	d.i = at
	m, err := d.mapLen()
	if err != nil {
		return nil
	}
	fields := make([]inputField, 0, max(m, 0))
	for ; m > 0; m-- {
		k, err := d.rawStr()
		if err != nil || d.i >= len(d.b) {
			return fields
		}
		float := d.b[d.i] == 0xca || d.b[d.i] == 0xcb
		if d.skipValue() != nil {
			return fields
		}
		fields = append(fields, inputField{string(k), float})
	}
	return fields
}

// skipValue moves past one value without building it.
func (d *decoder) skipValue() error {
	end, err := d.scanEnd()
	if err == nil {
		d.i = end
	}
	return err
}

// jsonInputFields are the entries of a JSON request's input object (the
// last one written). As encoding/json does, a key "input" in another
// case counts when none is written so.
func jsonInputFields(data []byte) []inputField {
	var input json.RawMessage
	exact := false
	for k, v := range jsonObject(data) {
		switch {
		case k == "input":
			input, exact = v, true
		case !exact && strings.EqualFold(k, "input"):
			input = v
		}
	}
	var fields []inputField
	for k, v := range jsonObject(input) {
		float := len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9') && bytes.ContainsAny(v, ".eE")
		fields = append(fields, inputField{k, float})
	}
	return fields
}

// jsonObject yields the entries of the JSON object data, each value as
// written; nothing when data is not an object.
func jsonObject(data []byte) func(func(string, json.RawMessage) bool) {
	return func(yield func(string, json.RawMessage) bool) {
		d := json.NewDecoder(bytes.NewReader(data))
		if t, err := d.Token(); err != nil || t != json.Delim('{') {
			return
		}
		for d.More() {
			t, err := d.Token()
			if err != nil {
				return
			}
			k, _ := t.(string)
			var v json.RawMessage
			if d.Decode(&v) != nil || !yield(k, v) {
				return
			}
		}
	}
}
