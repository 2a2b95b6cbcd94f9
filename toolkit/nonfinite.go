package toolkit

import (
	"bytes"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
)

// Python's json.dumps writes a NaN or an infinity as a bare word,
// wherever it is; encoding/json refuses the value. nonFiniteJSON writes
// such a value as json.dumps does: it encodes a copy of it where each
// NaN or infinite float is a stand-in, a subnormal float no result
// computes, and writes the word where the stand-in is.

// Stand-ins for NaN, +Inf and -Inf, as float64 and as float32, and the
// words json.dumps writes for them.
var (
	standIn64 = [3]float64{math.Float64frombits(0x000FFFFFFFFFFFF1), math.Float64frombits(0x000FFFFFFFFFFFF2), math.Float64frombits(0x000FFFFFFFFFFFF3)}
	standIn32 = [3]float32{math.Float32frombits(0x007FFFF1), math.Float32frombits(0x007FFFF2), math.Float32frombits(0x007FFFF3)}
	pyWords   = [3]string{"NaN", "Infinity", "-Infinity"}
)

// maxNonFiniteDepth bounds the nesting the copy follows, as
// encoding/json takes a value nested deeper than 1000 pointers, maps
// or slices for one that holds itself.
const maxNonFiniteDepth = 1000

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// nonFiniteJSON is v encoded by enc's settings (compact, HTML not
// escaped) with each NaN or infinite float written as json.dumps
// writes it. It is false when v holds none it can reach (one in a
// type that encodes itself, or behind an unexported field), nests
// deeper than maxNonFiniteDepth, or holds a stand-in itself.
func nonFiniteJSON(v any) ([]byte, bool) {
	var c nonFiniteCopy
	cp, ok := c.copy(reflect.ValueOf(v), 0)
	if !ok || c.replaced == 0 {
		return nil, false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cp.Interface()); err != nil {
		return nil, false
	}
	return replaceStandIns(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), c.replaced)
}

// nonFiniteCopy copies a value with its NaN and infinite floats
// replaced by stand-ins, counting them.
type nonFiniteCopy struct {
	replaced int
}

func (c *nonFiniteCopy) copy(v reflect.Value, depth int) (reflect.Value, bool) {
	if !v.IsValid() {
		return v, true
	}
	if depth > maxNonFiniteDepth {
		return v, false
	}
	t := v.Type()
	if t.Kind() != reflect.Interface && (t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType) ||
		t.Implements(textMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType)) {
		return v, true // encodes itself
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		w := 0
		switch {
		case math.IsInf(f, 1):
			w = 1
		case math.IsInf(f, -1):
			w = 2
		case !math.IsNaN(f):
			return v, true
		}
		out := reflect.New(t).Elem()
		if t.Kind() == reflect.Float32 {
			out.SetFloat(float64(standIn32[w]))
		} else {
			out.SetFloat(standIn64[w])
		}
		c.replaced++
		return out, true
	case reflect.Interface:
		if v.IsNil() {
			return v, true
		}
		e, ok := c.copy(v.Elem(), depth+1)
		out := reflect.New(t).Elem()
		out.Set(e)
		return out, ok
	case reflect.Pointer:
		if v.IsNil() {
			return v, true
		}
		e, ok := c.copy(v.Elem(), depth+1)
		out := reflect.New(t.Elem())
		out.Elem().Set(e)
		return out, ok
	case reflect.Struct:
		out := reflect.New(t).Elem()
		out.Set(v)
		for i := range t.NumField() {
			if f := t.Field(i); !f.IsExported() || f.Tag.Get("json") == "-" {
				continue // not written
			}
			f, ok := c.copy(v.Field(i), depth+1)
			if !ok {
				return v, false
			}
			out.Field(i).Set(f)
		}
		return out, true
	case reflect.Map:
		if v.IsNil() {
			return v, true
		}
		out := reflect.MakeMapWithSize(t, v.Len())
		for it := v.MapRange(); it.Next(); {
			e, ok := c.copy(it.Value(), depth+1)
			if !ok {
				return v, false
			}
			out.SetMapIndex(it.Key(), e)
		}
		return out, true
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && (v.IsNil() || t.Elem().Kind() == reflect.Uint8) {
			return v, true // []byte is base64
		}
		out := reflect.New(t).Elem()
		if t.Kind() == reflect.Slice {
			out = reflect.MakeSlice(t, v.Len(), v.Len())
		}
		for i := range v.Len() {
			e, ok := c.copy(v.Index(i), depth+1)
			if !ok {
				return v, false
			}
			out.Index(i).Set(e)
		}
		return out, true
	}
	return v, true
}

// replaceStandIns writes the json.dumps word for each stand-in number
// in compact JSON (outside strings); false unless it finds exactly want
// of them, as a stand-in the value held itself, or one written inside a
// string (a `json:",string"` field), would be taken for a replaced one.
func replaceStandIns(compact []byte, want int) ([]byte, bool) {
	var texts [3][2][]byte
	for w := range 3 {
		texts[w][0], _ = json.Marshal(standIn64[w])
		texts[w][1], _ = json.Marshal(standIn32[w])
	}
	out := make([]byte, 0, len(compact))
	found := 0
	in, esc := false, false
	for i := 0; i < len(compact); i++ {
		ch := compact[i]
		switch {
		case in:
			switch {
			case esc:
				esc = false
			case ch == '\\':
				esc = true
			case ch == '"':
				in = false
			}
		case ch == '"':
			in = true
		case ch == '-' || '0' <= ch && ch <= '9':
			j := i
			for j < len(compact) && compact[j] != ',' && compact[j] != ']' && compact[j] != '}' {
				j++
			}
			tok := compact[i:j]
			word := ""
			for w := range 3 {
				if bytes.Equal(tok, texts[w][0]) || bytes.Equal(tok, texts[w][1]) {
					word = pyWords[w]
				}
			}
			if word != "" {
				out = append(out, word...)
				found++
			} else {
				out = append(out, tok...)
			}
			i = j - 1
			continue
		}
		out = append(out, ch)
	}
	return out, found == want
}
