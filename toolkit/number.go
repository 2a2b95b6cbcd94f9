package toolkit

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// NumberValue is the number n spells, as a decoded input holds one: an
// integer (no fraction or exponent written) as an int64, or a uint64
// past int64, so it stays exact beyond ±2^53; any other number as the
// nearest float64. It fails for a json.Number that is not a JSON number
// ("", "abc", "0x10", "1.") and for one beyond a float64's range (1e400).
// A Go caller that decodes a model's arguments with encoding/json's
// Decoder.UseNumber gets json.Numbers; the toolkit and the bus's client
// read each of them with NumberValue.
func NumberValue(n json.Number) (any, error) {
	s := string(n)
	if !isJSONNumber(s) {
		return nil, fmt.Errorf("json.Number %s is not a number", quoteNumber(s))
	}
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("json.Number %s is beyond a float64's range", quoteNumber(s))
	}
	return f, nil
}

// quoteNumber quotes a json.Number for a message, its first 64 bytes
// when it is longer.
func quoteNumber(s string) string {
	const shown = 64
	if len(s) <= shown {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%q… (%d more bytes)", s[:shown], len(s)-shown)
}

// isJSONNumber reports whether s is a number as JSON writes one.
func isJSONNumber(s string) bool {
	digits := func(i int) int {
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
		return i
	}
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i == len(s):
		return false
	case s[i] == '0':
		i++
	case '1' <= s[i] && s[i] <= '9':
		i = digits(i)
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		if j := digits(i + 1); j > i+1 {
			i = j
		} else {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if j := digits(i); j > i {
			i = j
		} else {
			return false
		}
	}
	return i == len(s)
}

// maxNumberDepth bounds the nesting inputNumbers follows: deeper than any
// value a decoder gives (encoding/json stops at 10000), so only a map
// that holds itself reaches it.
const maxNumberDepth = 10000

var errNumbersTooDeep = fmt.Errorf("the input is nested deeper than %d", maxNumberDepth)

// ErrNestedTooDeep is NumberValues' error for a value nested deeper than
// 10000 levels, as one holding itself is.
var ErrNestedTooDeep = fmt.Errorf("toolkit: the value is nested deeper than %d", maxNumberDepth)

// numberError is a json.Number NumberValue refused, and where it is in
// the input: the keys and indexes on the way to it, innermost first.
type numberError struct {
	at  []string
	err error
}

func (e *numberError) Error() string {
	var b strings.Builder
	for i := len(e.at) - 1; i >= 0; i-- {
		b.WriteString("/" + e.at[i])
	}
	return b.String() + ": " + e.err.Error()
}

// under notes that err came from the value at key (or index) seg.
func under(seg string, err error) error {
	if ne, ok := err.(*numberError); ok {
		ne.at = append(ne.at, seg)
	}
	return err
}

// inputNumbers returns input with each json.Number in it, at any depth,
// replaced by its NumberValue: input itself when it holds none, which
// costs a look at each value and no allocation; else a copy of the maps
// and slices on the way to one, so the caller's input is never changed.
// A typed slice, array or map (string-keyed) whose elements may hold a
// json.Number ([]json.Number, map[string]json.Number, []map[string]any)
// is walked too, and one that holds a json.Number becomes a []any or
// map[string]any, as a decoder gives it; one whose elements cannot
// ([]string, map[string]int) is left as it is, unwalked.
// A map or slice the input holds more than once (in process; no decoder
// gives one) is walked once past the first memoAfter values, its result
// then reused: the paths to it may be 2^levels. It reports whether it
// returns a copy.
func inputNumbers(input map[string]any) (map[string]any, bool, error) {
	var w numberWalk
	return w.mapNumbers(input, 0)
}

// NumberValues returns v with each json.Number in it, at any depth,
// replaced by its NumberValue, as a call's Input is read: v itself when
// it holds none; else a copy of the maps and slices on the way to one,
// where a typed slice or map holding one ([]json.Number,
// []map[string]any) becomes a []any or map[string]any. It fails as
// NumberValue does, and for a value nested deeper than 10000 levels
// (one holding itself: ErrNestedTooDeep). It never changes v.
func NumberValues(v any) (any, error) {
	var w numberWalk
	nv, _, err := w.valueNumbers(v, 0)
	if ne, ok := err.(*numberError); ok {
		return nil, ne.err
	}
	if err == errNumbersTooDeep {
		return nil, ErrNestedTooDeep
	}
	return nv, err
}

// memoAfter is how many values inputNumbers looks at before it notes
// the maps and slices it walked, as a decoded input of that size holds
// none twice.
const memoAfter = 1 << 16

// numberWalk is one walk of inputNumbers.
type numberWalk struct {
	seen int                      // values looked at
	done map[walked]numbersResult // the maps and slices walked, past memoAfter
}

// walked is a map, or a slice by its elements and length, and the type
// of a typed one (nil for map[string]any and []any).
type walked struct {
	p unsafe.Pointer
	n int
	t reflect.Type
}

type numbersResult struct {
	v       any
	changed bool
}

// memo is the result of the map or slice at k if walked before, ok
// false while none is; key is called past memoAfter values only, from
// when the walk notes its maps and slices.
func (w *numberWalk) memo(key func() walked) (k walked, r numbersResult, ok bool) {
	if w.done == nil {
		if w.seen <= memoAfter {
			return k, r, false
		}
		w.done = map[walked]numbersResult{}
	}
	k = key()
	r, ok = w.done[k]
	return k, r, ok
}

// note notes the result of the map or slice at k, once the walk does.
func (w *numberWalk) note(k walked, v any, changed bool) {
	if w.done != nil && k.p != nil {
		w.done[k] = numbersResult{v, changed}
	}
}

func (w *numberWalk) mapNumbers(m map[string]any, depth int) (map[string]any, bool, error) {
	k, r, ok := w.memo(func() walked { return walked{p: reflect.ValueOf(m).UnsafePointer()} })
	if ok {
		return r.v.(map[string]any), r.changed, nil
	}
	var out map[string]any
	for k, v := range m {
		nv, changed, err := w.valueNumbers(v, depth)
		if err != nil {
			return nil, false, under(escapePointer(k), err)
		}
		if changed {
			if out == nil {
				out = maps.Clone(m)
			}
			out[k] = nv
		}
	}
	if out == nil {
		w.note(k, m, false)
		return m, false, nil
	}
	w.note(k, out, true)
	return out, true, nil
}

func (w *numberWalk) valueNumbers(v any, depth int) (any, bool, error) {
	w.seen++
	switch x := v.(type) {
	case json.Number:
		n, err := NumberValue(x)
		if err != nil {
			return nil, false, &numberError{err: err}
		}
		return n, true, nil
	case map[string]any:
		if depth >= maxNumberDepth {
			return nil, false, errNumbersTooDeep
		}
		if m, changed, err := w.mapNumbers(x, depth+1); changed || err != nil {
			return m, changed, err
		}
	case []any:
		if depth >= maxNumberDepth {
			return nil, false, errNumbersTooDeep
		}
		k, r, ok := w.memo(func() walked { return walked{unsafe.Pointer(unsafe.SliceData(x)), len(x), nil} })
		if ok {
			return r.v, r.changed, nil
		}
		var out []any
		for i, e := range x {
			ne, changed, err := w.valueNumbers(e, depth+1)
			if err != nil {
				return nil, false, under(strconv.Itoa(i), err)
			}
			if changed {
				if out == nil {
					out = slices.Clone(x)
				}
				out[i] = ne
			}
		}
		if out != nil {
			w.note(k, out, true)
			return out, true, nil
		}
		w.note(k, x, false)
	case string, bool, float64, int, int64, nil:
	default:
		return w.typedNumbers(v, depth)
	}
	return v, false, nil
}

// typedNumbers is valueNumbers of a value of another type: a typed
// slice, array or string-keyed map whose elements may hold a
// json.Number is walked, by reflection, and becomes a []any or
// map[string]any when one is in it; any other value is left as it is.
func (w *numberWalk) typedNumbers(v any, depth int) (any, bool, error) {
	t := reflect.TypeOf(v)
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
	default:
		return v, false, nil
	}
	if !mayHoldNumber(t) {
		return v, false, nil
	}
	if depth >= maxNumberDepth {
		return nil, false, errNumbersTooDeep
	}
	rv := reflect.ValueOf(v)
	if t.Kind() == reflect.Map {
		if rv.IsNil() {
			return v, false, nil
		}
		k, r, ok := w.memo(func() walked { return walked{p: rv.UnsafePointer(), t: t} })
		if ok {
			return r.v, r.changed, nil
		}
		var out map[string]any
		for it := rv.MapRange(); it.Next(); {
			key := it.Key().String()
			nv, changed, err := w.valueNumbers(it.Value().Interface(), depth+1)
			if err != nil {
				return nil, false, under(escapePointer(key), err)
			}
			if changed {
				if out == nil {
					out = make(map[string]any, rv.Len())
					for it := rv.MapRange(); it.Next(); {
						out[it.Key().String()] = it.Value().Interface()
					}
				}
				out[key] = nv
			}
		}
		if out == nil {
			w.note(k, v, false)
			return v, false, nil
		}
		w.note(k, out, true)
		return out, true, nil
	}
	var k walked
	if t.Kind() == reflect.Slice {
		var r numbersResult
		var ok bool
		k, r, ok = w.memo(func() walked { return walked{rv.UnsafePointer(), rv.Len(), t} })
		if ok {
			return r.v, r.changed, nil
		}
	}
	var out []any
	for i := range rv.Len() {
		ne, changed, err := w.valueNumbers(rv.Index(i).Interface(), depth+1)
		if err != nil {
			return nil, false, under(strconv.Itoa(i), err)
		}
		if changed {
			if out == nil {
				out = make([]any, rv.Len())
				for j := range out {
					out[j] = rv.Index(j).Interface()
				}
			}
			out[i] = ne
		}
	}
	if out == nil {
		w.note(k, v, false)
		return v, false, nil
	}
	w.note(k, out, true)
	return out, true, nil
}

var jsonNumberType = reflect.TypeFor[json.Number]()

// mayHold caches mayHoldNumber's answers by type.
var mayHold sync.Map // reflect.Type → bool

// mayHoldNumber reports whether a value of type t may hold a json.Number
// that inputNumbers reaches: t is json.Number or an interface, or a
// slice, array or string-keyed map of such (at any depth).
func mayHoldNumber(t reflect.Type) bool {
	if b, ok := mayHold.Load(t); ok {
		return b.(bool)
	}
	b := holdsNumber(t, map[reflect.Type]bool{})
	mayHold.Store(t, b)
	return b
}

// holdsNumber is mayHoldNumber, uncached; seen holds the types on the
// way to t, so a type that refers to itself (type T []T) ends.
func holdsNumber(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t == jsonNumberType || t.Kind() == reflect.Interface {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return holdsNumber(t.Elem(), seen)
	case reflect.Map:
		return t.Key().Kind() == reflect.String && holdsNumber(t.Elem(), seen)
	}
	return false
}
