package toolkit

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
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
// A map or slice the input holds more than once (in process; no decoder
// gives one) is walked once past the first memoAfter values, its result
// then reused: the paths to it may be 2^levels.
func inputNumbers(input map[string]any) (map[string]any, error) {
	var w numberWalk
	m, _, err := w.mapNumbers(input, 0)
	return m, err
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

// walked is a map, or a slice by its elements and length.
type walked struct {
	p unsafe.Pointer
	n int
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
		k, r, ok := w.memo(func() walked { return walked{unsafe.Pointer(unsafe.SliceData(x)), len(x)} })
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
	}
	return v, false, nil
}
