package toolkit

import "math"

// quickSchema is a precompiled check for the most common input schema: an
// object whose properties carry at most a primitive "type" (plus
// annotations), with "required" and optionally "additionalProperties":
// false. It can only answer "valid": an input it does not accept, and any
// schema it does not understand, goes through the full JSON-schema
// validator, which also writes the message for the model. So it changes
// the cost of a call, never its outcome.
type quickSchema struct {
	props    map[string]string // property name → JSON type ("" = any)
	list     []quickProp       // the same, to look up rather than range over the input
	required []string
	closed   bool // additionalProperties: false
}

type quickProp struct{ name, typ string }

// annotation keywords never affect validation.
func annotation(k string) bool {
	switch k {
	case "description", "title", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly":
		return true
	}
	return false
}

// newQuickSchema returns nil when the schema is not of the simple kind.
func newQuickSchema(schema map[string]any) *quickSchema {
	q := &quickSchema{props: map[string]string{}}
	for k, v := range schema {
		switch {
		case k == "type":
			if v != "object" {
				return nil
			}
		case k == "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, p := range props {
				t, ok := primitiveType(p)
				if !ok {
					return nil
				}
				q.props[name] = t
				q.list = append(q.list, quickProp{name, t})
			}
		case k == "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, r := range list {
				s, ok := r.(string)
				if !ok {
					return nil
				}
				q.required = append(q.required, s)
			}
		case k == "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			q.closed = !b
		case annotation(k):
		default:
			return nil
		}
	}
	return q
}

func primitiveType(p any) (string, bool) {
	m, ok := p.(map[string]any)
	if !ok {
		return "", false
	}
	t := ""
	for k, v := range m {
		switch {
		case k == "type":
			s, ok := v.(string)
			if !ok {
				return "", false
			}
			switch s {
			case "string", "number", "integer", "boolean", "null", "array", "object":
				t = s
			default:
				return "", false
			}
		case annotation(k):
		default:
			return "", false
		}
	}
	return t, true
}

// accepts reports whether input is certainly valid.
func (q *quickSchema) accepts(input map[string]any) bool {
	for _, r := range q.required {
		if _, ok := input[r]; !ok {
			return false
		}
	}
	if len(q.list) <= 2*len(input)+8 {
		// Few properties: a lookup each, no walk over the input map.
		found := 0
		for _, p := range q.list {
			v, ok := input[p.name]
			if !ok {
				continue
			}
			found++
			if !hasType(p.typ, v) {
				return false
			}
		}
		return !q.closed || found == len(input)
	}
	for k, v := range input {
		t, ok := q.props[k]
		if !ok {
			if q.closed {
				return false
			}
			continue
		}
		if !hasType(t, v) {
			return false
		}
	}
	return true
}

// hasType mirrors the JSON-schema "type" keyword for the Go values a
// decoded JSON object holds; anything unusual answers false (and so goes
// to the full validator).
func hasType(t string, v any) bool {
	switch t {
	case "":
		return true
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	case "array":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "number":
		switch v.(type) {
		case float64, float32, int, int64, int32, uint, uint64, uint32:
			return true
		}
		return false
	case "integer":
		switch x := v.(type) {
		case int, int64, int32, uint, uint64, uint32:
			return true
		case float64:
			_, f := math.Modf(x)
			return f == 0
		}
		return false
	}
	return false
}
