package toolkit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolbus/toolbus/internal/pyrepr"
)

// Raw model arguments (ToolCall.RawInput). AgentScope 2.x takes the
// model's arguments as the JSON string the model wrote, parses it, and
// when that fails repairs the common breakage before giving up: this file
// does the same. ParseRawInput accepts strict JSON objects, and repairs
// trailing commas, unquoted keys, single-quoted strings, Python's True,
// False and None, and a string, array or object left open at the end (a
// model cut off mid-call). What it cannot repair it reports with
// AgentScope's ToolJSONDecodeError text, which tells the model to send
// the arguments again in JSON.

// maxRawDepth bounds the nesting the repairer follows.
const maxRawDepth = 64

// ParseRawInput decodes a model's arguments string into an object,
// repairing it when it is not strict JSON. The error is the message for
// the model (AgentScope's ToolJSONDecodeError text).
func ParseRawInput(raw string) (map[string]any, error) {
	var v any
	var msg string
	if err := json.Unmarshal([]byte(raw), &v); err == nil {
		if m, ok := v.(map[string]any); ok {
			return ExactIntegers([]byte(raw), m), nil
		}
		msg = fmt.Sprintf("Error: Your argument string is decoded into a %s object, but a dict object is expected!", pyTypeOf(v, bytes.TrimSpace([]byte(raw))))
	} else {
		msg = fmt.Sprintf("Error: When decoding your tool arguments from JSON format to a Python dictionary, a JSONDecodeError was raised with message: %s.", err)
	}
	if repaired, ok := repairJSON(raw); ok {
		var m map[string]any
		if json.Unmarshal(repaired, &m) == nil && m != nil {
			return ExactIntegers(repaired, m), nil
		}
	}
	shown, hint := raw, ""
	if utf8.RuneCountInString(raw) > 200 { // characters, as Python's len counts them
		shown = cutRunes(raw, 100, false) + "[TRUNCATE]" + cutRunes(raw, 100, true)
		hint = `(Because the JSON string is too long, a truncated label "[TRUNCATE]" is used here to indicate the truncation)`
	}
	return nil, errors.New("<system-reminder>" + msg + "\n\nYour argument string is decoded by the following code snippet" + hint +
		":\n```python\nimport json\n\nyour_tool_arguments = " + pyrepr.Quote(shown) + "\njson.loads(your_tool_arguments)\n```\n\n" +
		"**You should recorrect the arguments in JSON format.**</system-reminder>")
}

// ExactIntegers returns m, which json.Unmarshal decoded from data, with
// every integer beyond float64's exact range (±2^53) that fits an int64
// as that int64, and one past int64 that fits a uint64 as that uint64, as
// Python's json.loads keeps them: an id (or hash) a model copies reaches
// the tool whole. Other numbers stay float64. Only data that
// MayHoldBigIntegers is decoded again. ParseRawInput, the MCP gateway,
// toolctl and the JSON wire codec decode arguments with it.
func ExactIntegers(data []byte, m map[string]any) map[string]any {
	if !MayHoldBigIntegers(data) {
		return m
	}
	if exact, ok := decodeExact(data).(map[string]any); ok {
		return exact
	}
	return m
}

// MayHoldBigIntegers reports whether data holds 16 digits in a row, as
// an integer beyond ±2^53 does.
func MayHoldBigIntegers(data []byte) bool {
	run := 0
	for _, b := range data {
		if b < '0' || b > '9' {
			run = 0
		} else if run++; run >= 16 {
			return true
		}
	}
	return false
}

// decodeExact decodes one JSON value with its integers beyond ±2^53 as
// int64 (withExactIntegers); nil when data is not JSON.
func decodeExact(data []byte) any {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	return withExactIntegers(v)
}

// withExactIntegers turns the json.Numbers in v into int64 (beyond ±2^53),
// uint64 (past int64) or float64, in place.
func withExactIntegers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = withExactIntegers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = withExactIntegers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil && (i > 1<<53 || i < -(1<<53)) {
			return i
		}
		if u, err := strconv.ParseUint(string(x), 10, 64); err == nil && u > math.MaxInt64 {
			return u
		}
		f, _ := x.Float64() // it decoded as a float64 before
		return f
	}
	return v
}

// cutRunes is the first (or last) n characters of s, as Python's
// s[:n] (or s[-n:]) gives them; s has more than n.
func cutRunes(s string, n int, last bool) string {
	if last {
		i := len(s)
		for ; n > 0; n-- {
			_, size := utf8.DecodeLastRuneInString(s[:i])
			i -= size
		}
		return s[i:]
	}
	i := 0
	for ; n > 0; n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// pyType names a decoded JSON value's Python type, as AgentScope's message
// does.
func pyType(v any) string {
	switch v.(type) {
	case []any:
		return "<class 'list'>"
	case string:
		return "<class 'str'>"
	case float64:
		if x := v.(float64); x == float64(int64(x)) {
			return "<class 'int'>" // json.loads reads 1 as an int
		}
		return "<class 'float'>"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "<class 'int'>"
	case float32:
		return "<class 'float'>"
	case map[string]any:
		return "<class 'dict'>"
	case bool:
		return "<class 'bool'>"
	case nil:
		return "<class 'NoneType'>"
	}
	return "<class 'object'>"
}

// repairJSON rewrites the JSON-like text s as strict JSON; false when it
// is beyond repair.
func repairJSON(s string) ([]byte, bool) {
	r := &repairer{s: s}
	r.space()
	if r.i >= len(r.s) || r.s[r.i] != '{' {
		return nil, false
	}
	if !r.value(0) {
		return nil, false
	}
	r.space()
	if r.i != len(r.s) {
		return nil, false // something after the object
	}
	return r.out.Bytes(), true
}

type repairer struct {
	s   string
	i   int
	out bytes.Buffer
}

func (r *repairer) space() {
	for r.i < len(r.s) && strings.IndexByte(" \t\r\n", r.s[r.i]) >= 0 {
		r.i++
	}
}

// value copies one value; at the end of the text, an open container or
// string is closed.
func (r *repairer) value(depth int) bool {
	if depth > maxRawDepth {
		return false
	}
	r.space()
	if r.i >= len(r.s) {
		return false
	}
	switch c := r.s[r.i]; {
	case c == '{':
		return r.container(depth, '{', '}')
	case c == '[':
		return r.container(depth, '[', ']')
	case c == '"' || c == '\'':
		return r.str()
	default:
		return r.literal()
	}
}

func (r *repairer) container(depth int, open, close byte) bool {
	r.i++
	r.out.WriteByte(open)
	first := true
	for {
		r.space()
		if r.i >= len(r.s) { // cut off: close it
			r.out.WriteByte(close)
			return true
		}
		if r.s[r.i] == close {
			r.i++
			r.out.WriteByte(close)
			return true
		}
		if !first {
			if r.s[r.i] != ',' {
				return false
			}
			r.i++
			r.space()
			if r.i >= len(r.s) {
				r.out.WriteByte(close)
				return true
			}
			if r.s[r.i] == close { // a trailing comma
				r.i++
				r.out.WriteByte(close)
				return true
			}
			r.out.WriteByte(',')
		}
		first = false
		if open == '{' {
			if !r.key() {
				return false
			}
			r.space()
			if r.i >= len(r.s) || r.s[r.i] != ':' {
				return false
			}
			r.i++
			r.out.WriteByte(':')
		}
		if !r.value(depth + 1) {
			return false
		}
	}
}

// key copies an object key: a string, or an unquoted identifier.
func (r *repairer) key() bool {
	if c := r.s[r.i]; c == '"' || c == '\'' {
		return r.str()
	}
	start := r.i
	for r.i < len(r.s) && (isIdent(r.s[r.i]) || r.s[r.i] >= utf8.RuneSelf) {
		r.i++
	}
	if r.i == start {
		return false
	}
	b, _ := json.Marshal(r.s[start:r.i])
	r.out.Write(b)
	return true
}

func isIdent(c byte) bool {
	return c == '_' || c == '-' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// str copies a string in double or single quotes; one left open at the
// end is closed.
func (r *repairer) str() bool {
	q := r.s[r.i]
	r.i++
	var b strings.Builder
	for r.i < len(r.s) {
		c := r.s[r.i]
		switch {
		case c == q:
			r.i++
			enc, _ := json.Marshal(b.String())
			r.out.Write(enc)
			return true
		case c == '\\' && r.i+1 < len(r.s):
			if q == '\'' && r.s[r.i+1] == '\'' {
				b.WriteByte('\'')
				r.i += 2
				continue
			}
			// A JSON escape: decode it with the JSON decoder.
			end := r.i + 2
			if r.s[r.i+1] == 'u' {
				end = min(r.i+6, len(r.s))
			}
			var dec string
			if json.Unmarshal([]byte(`"`+r.s[r.i:end]+`"`), &dec) != nil {
				return false
			}
			b.WriteString(dec)
			r.i = end
		default:
			b.WriteByte(c)
			r.i++
		}
	}
	enc, _ := json.Marshal(b.String()) // cut off inside the string
	r.out.Write(enc)
	return true
}

// literal copies a number, true/false/null, or Python's True/False/None.
func (r *repairer) literal() bool {
	start := r.i
	for r.i < len(r.s) && strings.IndexByte(",}] \t\r\n", r.s[r.i]) < 0 {
		r.i++
	}
	tok := r.s[start:r.i]
	switch tok {
	case "true", "True":
		r.out.WriteString("true")
	case "false", "False":
		r.out.WriteString("false")
	case "null", "None":
		r.out.WriteString("null")
	default:
		if _, err := strconv.ParseFloat(tok, 64); err != nil || !json.Valid([]byte(tok)) {
			return false
		}
		r.out.WriteString(tok)
	}
	return true
}

// rawFields are the top-level keys of a model's arguments string in the
// order it wrote them and, for each key, the JSON text of its value as
// the model wrote it (repaired as ParseRawInput does); nil when it is not
// an object.
func rawFields(raw string) ([]string, map[string]json.RawMessage) {
	data := []byte(raw)
	if !json.Valid(data) {
		repaired, ok := repairJSON(raw)
		if !ok {
			return nil, nil
		}
		data = repaired
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, nil
	}
	var keys []string
	values := map[string]json.RawMessage{}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return keys, values
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var v json.RawMessage
		if d.Decode(&v) != nil {
			return keys, values
		}
		values[k] = v // the last of a key written twice, as json.loads keeps
	}
	return keys, values
}

// pyTypeOf is pyType of v, a value json.Unmarshal decoded from lit (nil
// when its text is not known): a number written with a point or an
// exponent (1.0, 1e3) is a float to json.loads, whole as its value is.
func pyTypeOf(v any, lit json.RawMessage) string {
	if len(lit) > 0 && (lit[0] == '-' || lit[0] >= '0' && lit[0] <= '9') && bytes.ContainsAny(lit, ".eE") {
		return "<class 'float'>"
	}
	return pyType(v)
}
