package toolkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Schemas keep their declaration order in the JSON the model sees: a
// struct's fields in the order they are declared (AgentScope keeps a
// function's signature order, and a "thinking" field placed first matters
// to models), reset_tools' groups in registration order. A schema is a
// map, which has no order, so the order travels beside it as a list of
// KeyOrder (Function.Order, on the wire too) and the JSON encodings of a
// schema follow it (MarshalSchema, Function's MarshalJSON, the gateway's
// tools/list). The order is a hint: keys it does not list (a property
// Extend added) come after those it lists, sorted, and keys it lists that
// the schema lacks (a preset hid them) are skipped. A Raw tool's map has
// no order unless given one (WithSchemaOrder: a mounted MCP server's tools
// get the order their schemas came in, read off the wire) and comes out
// sorted, as encoding/json writes maps.

// KeyOrder is the order of the keys of one object in a schema.
type KeyOrder struct {
	// Path is the object's JSON pointer in the schema (RFC 6901): "" for
	// the schema itself, "/properties" for its properties.
	Path string `json:"path" msgpack:"path"`
	// Keys are its keys in order.
	Keys []string `json:"keys" msgpack:"keys"`
}

// maxOrderDepth bounds the nesting MarshalSchema follows (deeper values
// are written by encoding/json, sorted).
const maxOrderDepth = 64

// MarshalSchema writes schema as JSON with the objects' keys in order
// (see KeyOrder); without an order it is json.Marshal.
func MarshalSchema(schema map[string]any, order []KeyOrder) ([]byte, error) {
	if len(order) == 0 || schema == nil {
		return json.Marshal(schema)
	}
	idx := make(map[string][]string, len(order))
	for _, o := range order {
		idx[o.Path] = o.Keys
	}
	var buf bytes.Buffer
	if err := writeOrdered(&buf, schema, "", idx, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeOrdered(buf *bytes.Buffer, v any, path string, idx map[string][]string, depth int) error {
	if depth >= maxOrderDepth {
		b, err := json.Marshal(v)
		buf.Write(b)
		return err
	}
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			buf.WriteString("null")
			return nil
		}
		keys := make([]string, 0, len(x))
		taken := make(map[string]bool, len(x))
		for _, k := range idx[path] {
			if _, ok := x[k]; ok && !taken[k] {
				taken[k] = true
				keys = append(keys, k)
			}
		}
		n := len(keys)
		for k := range x {
			if !taken[k] {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys[n:])
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			b, _ := json.Marshal(k)
			buf.Write(b)
			buf.WriteByte(':')
			if err := writeOrdered(buf, x[k], path+"/"+escapePointer(k), idx, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		if x == nil {
			buf.WriteString("null")
			return nil
		}
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeOrdered(buf, e, path+"/"+strconv.Itoa(i), idx, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		buf.Write(b)
	}
	return nil
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	if !strings.ContainsAny(k, "~/") {
		return k
	}
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// OrderOf reads the key order of every object in a JSON document whose
// keys are not already sorted (sorted is what comes out without an
// order), for MarshalSchema.
func OrderOf(data []byte) ([]KeyOrder, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var order []KeyOrder
	if err := readOrder(d, "", &order, 0); err != nil {
		return nil, err
	}
	return order, nil
}

func readOrder(d *json.Decoder, path string, order *[]KeyOrder, depth int) error {
	if depth > maxOrderDepth { // deeper objects come out sorted
		var skip json.RawMessage
		return d.Decode(&skip)
	}
	tok, err := d.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		var keys []string
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return err
			}
			k, ok := kt.(string)
			if !ok {
				return fmt.Errorf("toolkit: object key %v", kt)
			}
			keys = append(keys, k)
			if err := readOrder(d, path+"/"+escapePointer(k), order, depth+1); err != nil {
				return err
			}
		}
		if _, err := d.Token(); err != nil { // '}'
			return err
		}
		if !slices.IsSorted(keys) {
			*order = append(*order, KeyOrder{Path: path, Keys: keys})
		}
	case json.Delim('['):
		for i := 0; d.More(); i++ {
			if err := readOrder(d, path+"/"+strconv.Itoa(i), order, depth+1); err != nil {
				return err
			}
		}
		if _, err := d.Token(); err != nil { // ']'
			return err
		}
	}
	return nil
}

// MarshalJSON writes the function with its parameters in their
// declaration order (Order), and without the order itself: this is the
// JSON a model sees.
func (f Function) MarshalJSON() ([]byte, error) {
	params, err := MarshalSchema(f.Parameters, f.Order)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}{f.Name, f.Description, params})
}
