package toolkit

import (
	"math"
	"reflect"
	"strings"
	"unicode/utf8"
)

// fieldPlan decodes a model's input (a decoded JSON object) straight into a
// flat struct of scalar fields, skipping the JSON round trip. It only
// handles what it can decode exactly as encoding/json would; for anything
// else (a nested value, an unexpected type, a key that differs only in
// case, a string that is not valid UTF-8, which encoding/json changes)
// decode answers false and the caller uses encoding/json, which also
// reports the error. So it changes the cost of a call, never its outcome.
type fieldPlan struct {
	fields map[string]planField
	list   []planField // the same, to look up rather than range over the input
}

type planField struct {
	name  string
	index int
	kind  reflect.Kind
}

// newFieldPlan returns nil unless rt is a struct whose visible fields are
// all exported scalars named by plain json tags, and it does not decode
// itself (its UnmarshalJSON, not its fields, takes the input).
func newFieldPlan(rt reflect.Type) *fieldPlan {
	if rt.Kind() != reflect.Struct || decodesFromJSON(rt) {
		return nil
	}
	p := &fieldPlan{fields: map[string]planField{}}
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Anonymous {
			return nil
		}
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "string") {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		switch k := f.Type.Kind(); k {
		case reflect.String, reflect.Bool,
			reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64:
			if f.Type.PkgPath() != "" { // a named type may unmarshal itself
				return nil
			}
			if _, dup := p.fields[name]; dup {
				return nil
			}
			p.fields[name] = planField{name: name, index: i, kind: k}
			p.list = append(p.list, p.fields[name])
		default:
			return nil
		}
	}
	return p
}

// decode fills dst (an addressable struct) from input; false means "use
// encoding/json instead" (dst may then be partly filled).
func (p *fieldPlan) decode(input map[string]any, dst reflect.Value) bool {
	if len(p.list) <= 2*len(input)+8 {
		// Few fields: a lookup each; the input is walked only when it
		// has keys no field has (which may match one in another case).
		found := 0
		for _, pf := range p.list {
			v, ok := input[pf.name]
			if !ok {
				continue
			}
			found++
			if !setScalar(dst.Field(pf.index), pf.kind, v) {
				return false
			}
		}
		if found == len(input) {
			return true
		}
	}
	for k, v := range input {
		pf, ok := p.fields[k]
		if !ok {
			for name := range p.fields {
				if strings.EqualFold(name, k) {
					return false // encoding/json matches case-insensitively
				}
			}
			continue // unknown keys are ignored, as by encoding/json
		}
		if !setScalar(dst.Field(pf.index), pf.kind, v) {
			return false
		}
	}
	return true
}

func setScalar(f reflect.Value, kind reflect.Kind, v any) bool {
	switch kind {
	case reflect.String:
		s, ok := v.(string)
		if !ok || !utf8.ValidString(s) {
			return false // encoding/json replaces each invalid byte with U+FFFD
		}
		f.SetString(s)
		return true
	case reflect.Bool:
		b, ok := v.(bool)
		if ok {
			f.SetBool(b)
		}
		return ok
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var n int64
		switch x := v.(type) {
		case int:
			n = int64(x)
		case int64:
			n = x
		case float64:
			if x != math.Trunc(x) || x < -1<<62 || x > 1<<62 {
				return false
			}
			n = int64(x)
		default:
			return false
		}
		if f.OverflowInt(n) {
			return false
		}
		f.SetInt(n)
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		var n uint64
		switch x := v.(type) {
		case int:
			if x < 0 {
				return false
			}
			n = uint64(x)
		case float64:
			if x != math.Trunc(x) || x < 0 || x > 1<<62 {
				return false
			}
			n = uint64(x)
		default:
			return false
		}
		if f.OverflowUint(n) {
			return false
		}
		f.SetUint(n)
		return true
	case reflect.Float64:
		switch x := v.(type) {
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return false // not JSON: encoding/json reports it
			}
			f.SetFloat(x)
		case int:
			if x < -1<<53 || x > 1<<53 {
				return false
			}
			f.SetFloat(float64(x))
		default:
			return false
		}
		return true
	case reflect.Float32:
		x, ok := v.(float64)
		if !ok || float64(float32(x)) != x || math.IsInf(x, 0) {
			return false
		}
		f.SetFloat(x)
		return true
	}
	return false
}
