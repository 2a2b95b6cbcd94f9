package wire

import (
	"encoding"
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
// libWalk follows such a value first, as the library will, and refuses
// it past libMaxSteps. A value whose type holds no pointer or interface
// the library follows (a []string, a struct of strings and numbers) is
// not walked: the library writes at each of its levels, where the watch
// looks; nor is what a type's own encoder writes (a CustomEncoder, a
// Marshaler, a BinaryMarshaler or TextMarshaler, an error's text), which
// no walk can follow: one recursing on itself without writing to the
// Encoder it is given (an EncodeMsgpack calling enc.Encode on its own
// receiver, a MarshalMsgpack calling msgpack.Marshal on a value holding
// itself) still overflows the stack.

// libMaxSteps bounds how many pointers, interfaces, structs, slices,
// arrays and maps deep libWalk follows a value: four for each of
// maxEncodeDepth levels (an interface holding a pointer to a struct
// whose field is the next level), about where the watch stops the
// library, and a stack of libWalk's calls that deep is a few MiB.
const libMaxSteps = 4 * maxEncodeDepth

var (
	customEncoderType   = reflect.TypeFor[msgpack.CustomEncoder]()
	marshalerType       = reflect.TypeFor[msgpack.Marshaler]()
	binaryMarshalerType = reflect.TypeFor[encoding.BinaryMarshaler]()
	textMarshalerType   = reflect.TypeFor[encoding.TextMarshaler]()
	errorType           = reflect.TypeFor[error]()
)

// libType is what libWalk knows of a type.
type libType struct {
	walked bool  // a value of it may hold a pointer or an interface the library follows
	fields []int // a struct's fields the library may write
	loop   error // the library cannot make its encoder for it (typeLoop)
}

// libTypes caches libTypeOf's answers by type.
var libTypes sync.Map // reflect.Type → *libType

func libTypeOf(t reflect.Type) *libType {
	if lt, ok := libTypes.Load(t); ok {
		return lt.(*libType)
	}
	lt := &libType{walked: holdsPointer(t, map[reflect.Type]bool{}), loop: typeLoop(t, map[reflect.Type]bool{})}
	if t.Kind() == reflect.Struct {
		lt.fields = libFields(t)
	}
	libTypes.Store(t, lt)
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

// holdsPointer is libTypeOf(t).walked, uncached; seen holds the types
// on the way to t, so a type that refers to itself ends.
func holdsPointer(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] || ownEncoder(t) {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		return true
	case reflect.Slice, reflect.Array:
		return holdsPointer(t.Elem(), seen)
	case reflect.Map:
		return holdsPointer(t.Key(), seen) || holdsPointer(t.Elem(), seen)
	case reflect.Struct:
		for _, i := range libFields(t) {
			if holdsPointer(t.Field(i).Type, seen) {
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

// libWalk follows v, steps levels down, as the library writes it, and
// fails with errEncodeTooDeep past libMaxSteps.
func libWalk(v reflect.Value, steps int) error {
	lt := libTypeOf(v.Type())
	if lt.loop != nil {
		return lt.loop
	}
	if !lt.walked {
		return nil
	}
	if steps >= libMaxSteps {
		return errEncodeTooDeep
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return libWalk(v.Elem(), steps+1)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := libWalk(v.Index(i), steps+1); err != nil {
				return err
			}
		}
	case reflect.Map:
		return libWalkMap(v, steps)
	case reflect.Struct:
		for _, i := range lt.fields {
			if err := libWalk(v.Field(i), steps+1); err != nil {
				return err
			}
		}
	}
	return nil
}

var mapStringAnyType = reflect.TypeFor[map[string]any]()

// libWalkMap is libWalk of a map. It copies the keys and values it
// follows into one variable each, where a Value of each would be an
// allocation of its own (but for a map the library reaches through an
// unexported embedded field, which cannot be copied from); a map[string]any (a field of a tool's struct)
// is ranged over as Go does.
func libWalkMap(v reflect.Value, steps int) error {
	if v.Len() == 0 {
		return nil
	}
	t := v.Type()
	if t == mapStringAnyType && v.CanInterface() {
		for _, e := range v.Interface().(map[string]any) {
			if e == nil {
				continue
			}
			if err := libWalk(reflect.ValueOf(e), steps+2); err != nil {
				return err
			}
		}
		return nil
	}
	var k, e reflect.Value
	if libTypeOf(t.Key()).walked {
		k = reflect.New(t.Key()).Elem()
	}
	if libTypeOf(t.Elem()).walked {
		e = reflect.New(t.Elem()).Elem()
	}
	// A map reached through an unexported embedded field, which the
	// library writes, cannot be copied from: its keys and values are
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
			if err := libWalk(key, steps+1); err != nil {
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
			if err := libWalk(elem, steps+1); err != nil {
				return err
			}
		}
	}
	return nil
}
