package wire

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// The msgpack library follows a pointer or an interface to what it
// holds without writing a byte, so the depth watch of its buffer
// (libBuffer), which looks as the library writes, never looks at a
// value that holds itself through pointers and interfaces alone (var x
// any; x = &x) or at a chain of them a million deep: the library
// recursed until the stack overflowed, a crash no recover catches.
// encoding/json, writing a JSON body, looks for a value holding itself
// but not at depth: a chain a million deep overflowed its stack too. And
// both write a value met twice (a pointer two fields share) twice, so
// one doubling at each of forty levels was written whole, a terabyte.
// walkValue follows such a value first, as the encoder will, and
// refuses it past libMaxSteps, or past maxWalkNodes values in all. A
// value whose type holds no pointer or interface the encoder follows (a
// []string, a struct of strings and numbers) is not walked: the library
// writes at each of its levels, where the watch looks, and its buffer
// holds at most maxEncodedBytes; nor is what a type's own encoder
// writes (a CustomEncoder, a Marshaler, a BinaryMarshaler or
// TextMarshaler, an error's text for msgpack; a json.Marshaler or
// TextMarshaler for JSON), which no walk can follow: one recursing on
// itself without writing to the Encoder it is given (an EncodeMsgpack
// calling enc.Encode on its own receiver, a MarshalMsgpack calling
// msgpack.Marshal on a value holding itself) still overflows the stack.

// libMaxSteps bounds how many pointers, interfaces, structs, slices,
// arrays and maps deep a walk follows a value: four for each of
// maxEncodeDepth levels (an interface holding a pointer to a struct
// whose field is the next level), about where the watch stops the
// library, and a stack of the walk's calls that deep is a few MiB.
const libMaxSteps = 4 * maxEncodeDepth

var (
	customEncoderType   = reflect.TypeFor[msgpack.CustomEncoder]()
	marshalerType       = reflect.TypeFor[msgpack.Marshaler]()
	binaryMarshalerType = reflect.TypeFor[encoding.BinaryMarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	errorType           = reflect.TypeFor[error]()
	jsonMarshalerType   = reflect.TypeFor[json.Marshaler]()
)

// libType is what a walk knows of a type.
type libType struct {
	walked bool  // a value of it may hold a pointer or an interface the encoder follows
	fields []int // a struct's fields the encoder may write
	loop   error // the library cannot make its encoder for it (typeLoop)
}

// walkRules is what a walk follows of one encoder's: the msgpack
// library's (libRules) or encoding/json's (jsonRules).
type walkRules struct {
	types  sync.Map                 // reflect.Type → *libType
	fields func(reflect.Type) []int // a struct's fields the encoder may write
	own    func(reflect.Type) bool  // the type writes itself
	loops  bool                     // a type the encoder cannot make its encoder for is refused (typeLoop)
	// What a walk refuses: nesting deeper than maxEncodeDepth levels,
	// and more than maxWalkNodes values.
	tooDeep, tooLarge error
}

var (
	libRules = &walkRules{fields: libFields, own: ownEncoder, loops: true,
		tooDeep: errEncodeTooDeep, tooLarge: errEncodeTooLarge}
	jsonRules = &walkRules{fields: jsonFields, own: jsonOwnEncoder,
		tooDeep:  fmt.Errorf("json: the value is nested deeper than %d", maxEncodeDepth),
		tooLarge: fmt.Errorf("json: the value would encode to more than %d MiB", maxEncodedBytes>>20)}
)

func (r *walkRules) typeOf(t reflect.Type) *libType {
	if lt, ok := r.types.Load(t); ok {
		return lt.(*libType)
	}
	lt := &libType{walked: r.holdsPointer(t, map[reflect.Type]bool{})}
	if r.loops {
		lt.loop = typeLoop(t, map[reflect.Type]bool{})
	}
	if t.Kind() == reflect.Struct {
		lt.fields = r.fields(t)
	}
	r.types.Store(t, lt)
	return lt
}

// ownEncoder reports whether the library writes a value of type t with
// the type's own method (or, for an error, its text), as its
// getEncoder chooses.
func ownEncoder(t reflect.Type) bool {
	for _, m := range [...]reflect.Type{customEncoderType, marshalerType, binaryMarshalerType, textMarshalerType} {
		if t.Implements(m) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return t == errorType
}

// libFields returns the indexes of the fields of struct type t the
// library may write: exported or embedded, and not tagged "-" (a tag
// the library may read as "-" otherwise, " - ", is walked: more than
// the library follows, never less).
func libFields(t reflect.Type) []int {
	var out []int
	for i := range t.NumField() {
		f := t.Field(i)
		if name, _, _ := strings.Cut(f.Tag.Get("msgpack"), ","); name == "-" {
			continue
		}
		if f.IsExported() || f.Anonymous {
			out = append(out, i)
		}
	}
	return out
}

// holdsPointer is typeOf(t).walked, uncached; seen holds the types
// on the way to t, so a type that refers to itself ends.
func (r *walkRules) holdsPointer(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] || r.own(t) {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		return true
	case reflect.Slice, reflect.Array:
		return r.holdsPointer(t.Elem(), seen)
	case reflect.Map:
		return r.holdsPointer(t.Key(), seen) || r.holdsPointer(t.Elem(), seen)
	case reflect.Struct:
		for _, i := range r.fields(t) {
			if r.holdsPointer(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// typeLoop returns an error if the library, making its encoder for t or
// for a type t holds, would recurse until the stack overflows, whatever
// the value (a nil one too): for a pointer type that is a pointer to
// itself (type P *P), as it makes the pointer's encoder from its
// element's, and for a struct embedding a pointer to itself (type E
// struct{ *E }, or two embedding each other), as it reads the fields of
// an embedded struct to inline them. It follows every type the library
// may (more than it does at once), so seen holds the types looked at.
func typeLoop(t reflect.Type, seen map[reflect.Type]bool) error {
	if seen[t] || ownEncoder(t) {
		return nil
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer:
		chain := map[reflect.Type]bool{t: true}
		for e := t.Elem(); e.Kind() == reflect.Pointer; e = e.Elem() {
			if chain[e] {
				return fmt.Errorf("msgpack: the type %s is a pointer to itself, which the msgpack library cannot write", e)
			}
			chain[e] = true
		}
		return typeLoop(t.Elem(), seen)
	case reflect.Slice, reflect.Array:
		return typeLoop(t.Elem(), seen)
	case reflect.Map:
		if err := typeLoop(t.Key(), seen); err != nil {
			return err
		}
		return typeLoop(t.Elem(), seen)
	case reflect.Struct:
		if u := embedLoop(t, map[reflect.Type]bool{}); u != nil {
			return fmt.Errorf("msgpack: the type %s embeds itself, which the msgpack library cannot write", u)
		}
		for _, i := range libFields(t) {
			if err := typeLoop(t.Field(i).Type, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// embedLoop returns the struct type that embeds itself among struct
// type t and the ones it embeds (through pointers too, not tagged
// noinline), which the library inlines, or nil; path holds the
// embedding ones on the way to t.
func embedLoop(t reflect.Type, path map[reflect.Type]bool) reflect.Type {
	if path[t] {
		return t
	}
	path[t] = true
	defer delete(path, t)
	for _, i := range libFields(t) {
		f := t.Field(i)
		if !f.Anonymous || slices.Contains(tagOptions(f.Tag.Get("msgpack")), "noinline") {
			continue
		}
		u := f.Type
		for u.Kind() == reflect.Pointer {
			u = u.Elem()
		}
		if u.Kind() != reflect.Struct || ownEncoder(u) {
			continue
		}
		if loop := embedLoop(u, path); loop != nil {
			return loop
		}
	}
	return nil
}

// tagOptions returns the options of a msgpack tag, after its name.
func tagOptions(tag string) []string {
	opts := strings.Split(tag, ",")[1:]
	for i, o := range opts {
		opts[i] = strings.TrimSpace(o)
	}
	return opts
}

// jsonFields returns the indexes of the fields of struct type t
// encoding/json may write: exported or embedded, and not tagged "-".
func jsonFields(t reflect.Type) []int {
	var out []int
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("json") == "-" {
			continue
		}
		if f.IsExported() || f.Anonymous {
			out = append(out, i)
		}
	}
	return out
}

// jsonOwnEncoder reports whether encoding/json writes a value of type t
// with the type's own method (MarshalJSON or MarshalText).
func jsonOwnEncoder(t reflect.Type) bool {
	for _, m := range [...]reflect.Type{jsonMarshalerType, textMarshalerType} {
		if t.Implements(m) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return false
}

// maxWalkNodes bounds how many values a walk counts, a value met twice
// (a pointer two fields share) counted each time, as the encoder writes
// it each time: a value built to double at each of forty levels (a
// node whose two fields point to the same next node) is a few hundred
// bytes in memory and a terabyte written, which the encoder would write
// whole, holding it, before anything looked at its size. Each value the
// walk counts but pointers and interfaces is a byte written at least,
// so the bound is about what maxEncodedBytes holds: no value a
// connection could carry is refused.
const maxWalkNodes = 3 * maxEncodedBytes

// memoAfter is how many values a walk counts before it notes the
// pointers, maps and slices it walks, so that one met again is counted,
// not walked again: a value that size holds few twice, if any.
const memoAfter = 1 << 16

// walk is one walk of a value (walkValue).
type walk struct {
	rules *walkRules
	nodes int                  // values counted
	memo  map[walkKey]walkSeen // past memoAfter values, the walked ones by where they are
}

// walkKey is a pointer, map or slice (by its elements and length) of a
// type.
type walkKey struct {
	p uintptr
	n int
	t reflect.Type
}

// walkSeen is what a walk counted below a value: its values, and how
// many steps deep they went.
type walkSeen struct{ nodes, height int }

// walkValue follows v as the encoder of rules writes it, before the
// encoder does, and refuses it (rules.tooDeep) past libMaxSteps steps
// down, or (rules.tooLarge) past maxWalkNodes values in all: the
// encoder would recurse until the stack overflows, a crash no recover
// catches, or write more than it can hold. A value whose type holds no
// pointer or interface (a []string, a struct of strings and numbers)
// is not walked.
func walkValue(rules *walkRules, v any) error {
	if v == nil {
		return nil
	}
	w := walk{rules: rules}
	_, err := w.value(reflect.ValueOf(v), 0)
	return err
}

// value walks v, steps levels down, and returns how many steps deeper
// it went.
func (w *walk) value(v reflect.Value, steps int) (height int, err error) {
	lt := w.rules.typeOf(v.Type())
	if lt.loop != nil {
		return 0, lt.loop
	}
	if !lt.walked {
		return 0, nil
	}
	if steps >= libMaxSteps {
		return 0, w.rules.tooDeep
	}
	if w.nodes++; w.nodes > maxWalkNodes {
		return 0, w.rules.tooLarge
	}
	var key walkKey
	if w.nodes > memoAfter {
		if key = keyOf(v); key.t != nil {
			if s, ok := w.memo[key]; ok {
				if steps+s.height >= libMaxSteps {
					return 0, w.rules.tooDeep
				}
				if w.nodes += s.nodes; w.nodes > maxWalkNodes {
					return 0, w.rules.tooLarge
				}
				return s.height, nil
			}
		}
	}
	before := w.nodes
	height, err = w.below(v, lt, steps)
	if err == nil && key.t != nil {
		if w.memo == nil {
			w.memo = map[walkKey]walkSeen{}
		}
		w.memo[key] = walkSeen{nodes: w.nodes - before, height: height}
	}
	return height, err
}

// keyOf is where v is, for a pointer, a map or a slice; none (t nil)
// for other values, and for a nil or empty one.
func keyOf(v reflect.Value) walkKey {
	switch v.Kind() {
	case reflect.Pointer, reflect.Map:
		if !v.IsNil() {
			return walkKey{p: v.Pointer(), t: v.Type()}
		}
	case reflect.Slice:
		if v.Len() > 0 {
			return walkKey{p: v.Pointer(), n: v.Len(), t: v.Type()}
		}
	}
	return walkKey{}
}

// below walks what v holds, steps levels down.
func (w *walk) below(v reflect.Value, lt *libType, steps int) (height int, err error) {
	deeper := func(e reflect.Value, by int) error {
		h, err := w.value(e, steps+by)
		height = max(height, h+by)
		return err
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0, nil
		}
		return height, deeper(v.Elem(), 1)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := deeper(v.Index(i), 1); err != nil {
				return height, err
			}
		}
	case reflect.Map:
		return height, w.walkMap(v, deeper)
	case reflect.Struct:
		for _, i := range lt.fields {
			if err := deeper(v.Field(i), 1); err != nil {
				return height, err
			}
		}
	}
	return height, nil
}

var mapStringAnyType = reflect.TypeFor[map[string]any]()

// walkMap walks the keys and values of map v (deeper). It copies the
// keys and values it follows into one variable each, where a Value of
// each would be an allocation of its own (but for a map the encoder
// reaches through an unexported embedded field, which cannot be copied
// from); a map[string]any (a field of a tool's struct) is ranged over
// as Go does.
func (w *walk) walkMap(v reflect.Value, deeper func(reflect.Value, int) error) error {
	if v.Len() == 0 {
		return nil
	}
	t := v.Type()
	if t == mapStringAnyType && v.CanInterface() {
		for _, e := range v.Interface().(map[string]any) {
			if e == nil {
				continue
			}
			if err := deeper(reflect.ValueOf(e), 2); err != nil {
				return err
			}
		}
		return nil
	}
	var k, e reflect.Value
	if w.rules.typeOf(t.Key()).walked {
		k = reflect.New(t.Key()).Elem()
	}
	if w.rules.typeOf(t.Elem()).walked {
		e = reflect.New(t.Elem()).Elem()
	}
	// A map reached through an unexported embedded field, which the
	// encoder writes, cannot be copied from: its keys and values are
	// taken a Value each.
	copied := v.CanInterface()
	for it := v.MapRange(); it.Next(); {
		if k.IsValid() {
			key := k
			if copied {
				k.SetIterKey(it)
			} else {
				key = it.Key()
			}
			if err := deeper(key, 1); err != nil {
				return err
			}
		}
		if e.IsValid() {
			elem := e
			if copied {
				e.SetIterValue(it)
			} else {
				elem = it.Value()
			}
			if err := deeper(elem, 1); err != nil {
				return err
			}
		}
	}
	return nil
}
