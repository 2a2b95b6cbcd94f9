// Package valuewalk follows a Go value as an encoder will write it,
// before the encoder does, and refuses one the encoder would not
// survive. encoding/json and the msgpack library both follow a value as
// deep as it goes, with no bound of their own, so a chain of structs or
// lists a million deep (or, for the msgpack library, one holding itself
// through pointers and interfaces) recursed until the stack overflowed,
// a crash no recover catches; and both write a value met twice (a
// pointer two fields share) twice, so a value a few hundred bytes in
// memory that doubles at each of forty levels was written whole, a
// terabyte, until the process was killed. A walk refuses a value deeper
// than its steps (ErrTooDeep) or counting more than its values
// (ErrTooLarge), a value met again counted without being walked again.
//
// A value whose type holds no pointer or interface the encoder follows
// (a []string, a struct of strings and numbers) is not walked where the
// encoder's buffer bounds what it writes (Rules.Bytes unset): its depth
// is its type's. encoding/json builds what it writes in memory, where no
// buffer of the caller's bounds it, and writes a string or a list met
// many times (a list holding the same long list a hundred thousand
// times) each time: its rules (JSON) walk strings, slices and maps too,
// and count their bytes. What a type's own encoder writes (Rules.Own) no
// walk can follow, but for a json.RawMessage's bytes.
package valuewalk

import (
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"unsafe"
)

// Rules is what a walk follows of one encoder's.
type Rules struct {
	// Fields returns the indexes of a struct type's fields the encoder
	// may write (more than it writes, never less).
	Fields func(reflect.Type) []int
	// Own reports whether the encoder writes a value of the type with
	// the type's own method, which the walk does not follow.
	Own func(reflect.Type) bool
	// OwnAddr, when set, reports whether the encoder writes a value of
	// the type with the type's own method on its pointer only where it
	// can take the value's address (encoding/json), and its fields
	// elsewhere (a map's value, what an interface holds): the walk
	// follows such a value where it is not addressable.
	OwnAddr func(reflect.Type) bool
	// Loop, when set, returns an error for a type the encoder cannot
	// make its encoder for, whatever the value.
	Loop func(reflect.Type) error
	// Bytes, when set, is for an encoder that writes a value whole in
	// memory (encoding/json): a walk follows strings, slices and maps
	// too, and counts a string's or a []byte's bytes (and those of a
	// type of either kind with its own encoder, a json.RawMessage) and
	// each value of a type it does not walk (an array of numbers) as
	// values, a byte each at least of what the encoder writes.
	Bytes bool

	types sync.Map // reflect.Type → *typeInfo
}

// JSON is encoding/json's rules.
var JSON = &Rules{Fields: jsonFields, Own: jsonOwn, OwnAddr: jsonOwnAddr, Bytes: true}

// ErrTooDeep and ErrTooLarge are what a walk refuses.
var (
	ErrTooDeep  = errors.New("the value is nested too deep")
	ErrTooLarge = errors.New("the value would encode to too much")
)

// typeInfo is what a walk knows of a type.
type typeInfo struct {
	walked bool  // a value of it may hold a pointer or an interface the encoder follows (with Rules.Bytes, a string, slice or map)
	fields []int // a struct's fields the encoder may write
	loop   error // Rules.Loop's answer
	leaves int   // with Rules.Bytes, the values a value of it not walked holds
	addr   bool  // Rules.OwnAddr's answer
	inline bool  // it is, or holds in its fields and elements, a type of Rules.OwnAddr
}

func (r *Rules) typeOf(t reflect.Type) *typeInfo {
	if ti, ok := r.types.Load(t); ok {
		return ti.(*typeInfo)
	}
	ti := &typeInfo{walked: r.holdsPointer(t, map[reflect.Type]bool{})}
	if r.Loop != nil {
		ti.loop = r.Loop(t)
	}
	if t.Kind() == reflect.Struct {
		ti.fields = r.Fields(t)
	}
	if r.Bytes && !ti.walked {
		ti.leaves = r.leaves(t)
	}
	if r.OwnAddr != nil {
		ti.addr, ti.inline = r.OwnAddr(t), r.holdsOwnAddr(t, map[reflect.Type]bool{})
	}
	r.types.Store(t, ti)
	return ti
}

// holdsPointer is typeOf(t).walked, uncached; seen holds the types on
// the way to t, so a type that refers to itself ends.
func (r *Rules) holdsPointer(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	if r.Own(t) {
		return r.Bytes && isBytes(t)
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		return true
	case reflect.String:
		return r.Bytes
	case reflect.Slice:
		return r.Bytes || r.holdsPointer(t.Elem(), seen)
	case reflect.Array:
		return r.holdsPointer(t.Elem(), seen)
	case reflect.Map:
		return r.Bytes || r.holdsPointer(t.Key(), seen) || r.holdsPointer(t.Elem(), seen)
	case reflect.Struct:
		for _, i := range r.Fields(t) {
			if r.holdsPointer(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// holdsOwnAddr reports whether t is, or holds in its fields and
// elements (not through a pointer, slice, map or interface, whose
// values are addressable or not whatever holds them), a type of
// Rules.OwnAddr; seen holds the types on the way to t.
func (r *Rules) holdsOwnAddr(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] || r.Own(t) {
		return false
	}
	seen[t] = true
	if r.OwnAddr(t) {
		return true
	}
	switch t.Kind() {
	case reflect.Array:
		return r.holdsOwnAddr(t.Elem(), seen)
	case reflect.Struct:
		for _, i := range r.Fields(t) {
			if r.holdsOwnAddr(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// isBytes reports whether t is a string or a []byte, of whatever name.
func isBytes(t reflect.Type) bool {
	return t.Kind() == reflect.String || t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8
}

// maxLeaves bounds what leaves returns, so that no sum overflows.
const maxLeaves = 1 << 30

// leaves returns how many values a value of type t, which holds nothing
// a walk follows, holds: each number, bool or value of a type with its
// own encoder one.
func (r *Rules) leaves(t reflect.Type) int {
	if r.Own(t) {
		return 1
	}
	switch t.Kind() {
	case reflect.Array:
		return min(t.Len()*r.leaves(t.Elem()), maxLeaves)
	case reflect.Struct:
		n := 0
		for _, i := range r.Fields(t) {
			n = min(n+r.leaves(t.Field(i).Type), maxLeaves)
		}
		return n
	}
	return 1
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

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

// jsonOwn reports whether encoding/json writes a value of type t with
// the type's own method (MarshalJSON or MarshalText) wherever it is.
func jsonOwn(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType)
}

// jsonOwnAddr reports whether encoding/json writes a value of type t
// with the method of its pointer where it can take the value's address
// (a list's element, a field of one), and its fields elsewhere.
func jsonOwnAddr(t reflect.Type) bool {
	if t.Kind() == reflect.Pointer || jsonOwn(t) {
		return false
	}
	pt := reflect.PointerTo(t)
	return pt.Implements(jsonMarshalerType) || pt.Implements(textMarshalerType)
}

// memoAfter is how many values a walk counts before it notes the
// pointers, maps and slices it walks, so that one met again is counted,
// not walked again: a value that size holds few twice, if any.
const memoAfter = 1 << 16

// walk is one walk of a value (Walk).
type walk struct {
	rules           *Rules
	maxSteps, nodes int                  // the bound of steps down, and values left to count
	memo            map[walkKey]walkSeen // past memoAfter values, the walked ones by where they are
	counted         int
	visited         int // values walked, each counted value met again not
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

// Walk follows v as the encoder of r writes it and refuses it
// (ErrTooDeep) past maxSteps pointers, interfaces, structs, slices,
// arrays and maps down (a map[string]any's entry two), or (ErrTooLarge)
// past maxNodes values in all, a value met twice counted twice; or it
// returns Rules.Loop's error for a type it meets. A walk's stack grows
// with the steps it takes: a few hundred bytes each.
func (r *Rules) Walk(v any, maxSteps, maxNodes int) error {
	w := walk{rules: r, maxSteps: maxSteps, nodes: maxNodes}
	return w.walk(v)
}

// walk walks v (Walk).
func (w *walk) walk(v any) error {
	if v == nil {
		return nil
	}
	_, err := w.value(reflect.ValueOf(v), 0)
	return err
}

// value walks v, steps levels down, and returns how many steps deeper
// it went.
func (w *walk) value(v reflect.Value, steps int) (height int, err error) {
	ti := w.rules.typeOf(v.Type())
	if ti.loop != nil {
		return 0, ti.loop
	}
	if ti.addr && v.CanAddr() {
		return 0, w.count(1) // its own method writes it
	}
	if !ti.walked {
		return 0, w.count(ti.leaves)
	}
	if steps >= w.maxSteps {
		return 0, ErrTooDeep
	}
	if err := w.count(1); err != nil {
		return 0, err
	}
	var key walkKey
	if w.counted > memoAfter {
		if key = keyOf(v); key.t != nil {
			if s, ok := w.memo[key]; ok {
				if steps+s.height >= w.maxSteps {
					return 0, ErrTooDeep
				}
				return s.height, w.count(s.nodes)
			}
		}
	}
	w.visited++
	before := w.counted
	height, err = w.below(v, ti, steps)
	if err == nil && key.t != nil {
		if w.memo == nil {
			w.memo = map[walkKey]walkSeen{}
		}
		w.memo[key] = walkSeen{nodes: w.counted - before, height: height}
	}
	return height, err
}

// count counts n more values.
func (w *walk) count(n int) error {
	w.counted += n
	if w.nodes -= n; w.nodes < 0 {
		return ErrTooLarge
	}
	return nil
}

// keyOf is where v is, for a pointer, a map or a slice, and for an
// interface holding an array or a struct where that is (by its type; n
// -1), which two interfaces share when one was copied from the other
// (what other interfaces hold is noted where it is, or is a number or a
// string, counted at once); none (t nil) for other values, for a nil or
// empty one, and for an interface neither addressable nor exported.
func keyOf(v reflect.Value) walkKey {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			break
		}
		if k := v.Elem().Kind(); k != reflect.Array && k != reflect.Struct {
			break
		}
		var data unsafe.Pointer
		switch {
		case v.CanAddr():
			data = (*[2]unsafe.Pointer)(unsafe.Pointer(v.UnsafeAddr()))[1]
		case v.CanInterface():
			e := v.Interface()
			data = (*[2]unsafe.Pointer)(unsafe.Pointer(&e))[1]
		default:
			return walkKey{}
		}
		return walkKey{p: uintptr(data), n: -1, t: v.Elem().Type()}
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
func (w *walk) below(v reflect.Value, ti *typeInfo, steps int) (height int, err error) {
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
	case reflect.String:
		return 0, w.count(v.Len())
	case reflect.Slice, reflect.Array:
		if et := v.Type().Elem(); w.rules.Bytes && v.Kind() == reflect.Slice {
			if et.Kind() == reflect.Uint8 {
				return 0, w.count(v.Len()) // base64, or a json.RawMessage as it is
			}
			if e := w.rules.typeOf(et); !e.walked {
				return 0, w.count(v.Len() * max(e.leaves, 1))
			}
		}
		for i := range v.Len() {
			if err := deeper(v.Index(i), 1); err != nil {
				return height, err
			}
		}
	case reflect.Map:
		return height, w.walkMap(v, deeper)
	case reflect.Struct:
		for _, i := range ti.fields {
			if err := deeper(v.Field(i), 1); err != nil {
				return height, err
			}
		}
	}
	return height, nil
}

var (
	mapStringAnyType    = reflect.TypeFor[map[string]any]()
	mapStringStringType = reflect.TypeFor[map[string]string]()
)

// walkMap walks the keys and values of map v (deeper). It copies the
// keys and values it follows into one variable each, where a Value of
// each would be an allocation of its own (but for a map the encoder
// reaches through an unexported embedded field, which cannot be copied
// from); a map[string]any (a field of a tool's struct) is ranged over
// as Go does, and a map[string]string's bytes are counted so.
func (w *walk) walkMap(v reflect.Value, deeper func(reflect.Value, int) error) error {
	if v.Len() == 0 {
		return nil
	}
	t := v.Type()
	if t == mapStringStringType && w.rules.Bytes && v.CanInterface() {
		for k, e := range v.Interface().(map[string]string) {
			if err := w.count(2 + len(k) + len(e)); err != nil {
				return err
			}
		}
		return nil
	}
	if t == mapStringAnyType && v.CanInterface() {
		for k, e := range v.Interface().(map[string]any) {
			if w.rules.Bytes {
				if err := w.count(1 + len(k)); err != nil {
					return err
				}
			}
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
	kt, et := w.rules.typeOf(t.Key()), w.rules.typeOf(t.Elem())
	if kt.walked {
		k = reflect.New(t.Key()).Elem()
	}
	if et.walked {
		e = reflect.New(t.Elem()).Elem()
	}
	if err := w.count(v.Len() * (kt.leaves + et.leaves)); err != nil { // what is not walked, with Rules.Bytes
		return err
	}
	if !k.IsValid() && !e.IsValid() {
		return nil
	}
	// A map reached through an unexported embedded field, which the
	// encoder writes, cannot be copied from, and a copy is addressable
	// where the map's keys and values are not (Rules.OwnAddr): their
	// keys and values are taken a Value each.
	copied := v.CanInterface() && !kt.inline && !et.inline
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
