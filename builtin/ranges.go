package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/toolbus/toolbus/toolkit"
)

// rangesProp describes the ranges property of a file tool that verbs
// lines. Its schema takes any list (or null): AgentScope's tools check
// the ranges themselves, and a list that is not two integers reaches
// them and gets their answer, not the schema validator's.
func rangesProp(t *toolkit.Tool, verb string) {
	p := prop(t, "ranges")
	clear(p)
	p["type"] = []any{"array", "null"}
	p["description"] = fmt.Sprintf(rangesDoc, verb)
}

// isNull reports whether ranges were not given (absent, or null:
// Python's None).
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// truthy reports whether ranges are what Python takes as true: given
// and not an empty list.
func truthy(raw json.RawMessage) bool {
	if isNull(raw) {
		return false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return true
	}
	switch v := v.(type) {
	case []any:
		return len(v) > 0
	case map[string]any:
		return len(v) > 0
	case string:
		return v != ""
	case float64:
		return v != 0
	case bool:
		return v
	}
	return false
}

// pairOf reads ranges as AgentScope accepts them: a list of two integers.
// A number written with a fraction or an exponent is not one, nor is a
// boolean (which Python would take for 0 or 1).
func pairOf(raw json.RawMessage) (r [2]int, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v []any
	if dec.Decode(&v) != nil || len(v) != 2 {
		return r, false
	}
	for i, e := range v {
		n, isNum := e.(json.Number)
		if !isNum {
			return r, false
		}
		x, err := strconv.Atoi(string(n)) // refuses "1.0", "1e3" and what overflows
		if err != nil {
			return r, false
		}
		r[i] = x
	}
	return r, true
}

// viewRanges checks view_text_file's ranges as AgentScope's
// _assert_ranges does: given reports ranges that are not null; an empty
// list is given but no pair (the whole file, as Python's "if ranges:"
// takes it); anything else must be a pair in order.
func viewRanges(raw json.RawMessage) (given bool, r [2]int, pair bool, err error) {
	if isNull(raw) {
		return false, r, false, nil
	}
	if !truthy(raw) {
		return true, r, false, nil
	}
	r, ok := pairOf(raw)
	if !ok {
		return true, r, false, toolkit.Errorf(toolkit.CodeInvalidInput,
			"InvalidArgumentError: Invalid range format. Expected a list of two integers, but got %s.", pyStr(raw))
	}
	if err := ordered(r); err != nil {
		return true, r, false, err
	}
	return true, r, true, nil
}

// ordered refuses a start after the end, with AgentScope's text, where
// both count from the same end of the file; lineRange checks the others
// once it knows the file's length.
func ordered(r [2]int) error {
	if (r[0] > 0 && r[1] > 0 || r[0] < 0 && r[1] < 0) && r[0] > r[1] {
		return startAfterEnd(r)
	}
	return nil
}

func startAfterEnd(r [2]int) error {
	return toolkit.Errorf(toolkit.CodeInvalidInput,
		"InvalidArgumentError: The start line is greater than the end line in the given range %s.", pyPair(r))
}

// pyPair writes line numbers as Python prints a list: [3, 5].
func pyPair(r [2]int) string {
	return fmt.Sprintf("[%d, %d]", r[0], r[1])
}
