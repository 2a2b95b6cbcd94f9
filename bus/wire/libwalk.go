package wire

import (
	"encoding"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/internal/valuewalk"
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
// holds at most maxEncodedBytes (encoding/json, which builds what it
// writes in memory, has strings, slices and maps walked too and their
// bytes counted: valuewalk.JSON); nor is what a type's own encoder
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
)

// libRules is the msgpack library's rules of a walk.
var libRules = &valuewalk.Rules{Fields: libFields, Own: ownEncoder,
	Loop: func(t reflect.Type) error { return typeLoop(t, map[reflect.Type]bool{}) }}

// The errors of a walk before encoding/json.
var (
	errJSONTooDeep  = fmt.Errorf("json: the value is nested deeper than %d", maxEncodeDepth)
	errJSONTooLarge = fmt.Errorf("json: the value would encode to more than %d MiB", maxEncodedBytes>>20)
)

// maxWalkNodes bounds how many values a walk counts, a value met twice
// (a pointer two fields share) counted each time, as the encoder writes
// it each time. Each value the walk counts but pointers and interfaces
// is a byte written at least, so the bound is about what
// maxEncodedBytes holds: no value a connection could carry is refused.
const maxWalkNodes = 3 * maxEncodedBytes

// walkValue walks v (valuewalk) by rules (libRules or valuewalk.JSON)
// before its encoder writes it, libMaxSteps steps and maxWalkNodes
// values at most, and says what it refuses as that encoder's error.
func walkValue(rules *valuewalk.Rules, v any) error {
	err := rules.Walk(v, libMaxSteps, maxWalkNodes)
	switch {
	case err == valuewalk.ErrTooDeep && rules == libRules:
		return errEncodeTooDeep
	case err == valuewalk.ErrTooLarge && rules == libRules:
		return errEncodeTooLarge
	case err == valuewalk.ErrTooDeep:
		return errJSONTooDeep
	case err == valuewalk.ErrTooLarge:
		return errJSONTooLarge
	}
	return err
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
