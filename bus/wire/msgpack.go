package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/toolbus/toolbus/toolkit"
	"github.com/vmihailenco/msgpack/v5"
)

// The msgpack primitives the generated codec (wire_gen.go) is built from.
// The encoder writes exactly what the msgpack library writes with compact
// integers (same keys, empty fields omitted, same widths), so either side
// may be the library; but a json.Number, which the library writes as a
// string, is written as the number it spells. The decoder reads what any msgpack writer produces
// for these messages, with the library's conversions (a number of any
// width where a field wants another, nil for an empty field, str or bin
// for strings, the timestamp extension), and checks every length against
// the bytes left and the nesting against MaxDepth before it allocates.

// Encoding.

// MetaEntry is one metadata key and value, and the next entry to add
// with it (nil for none).
type MetaEntry struct {
	Key   string
	Value any
	Next  *MetaEntry
}

func appendNil(b []byte) []byte { return append(b, 0xc0) }

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}

func appendMapLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x80|byte(n))
	case n <= math.MaxUint16:
		return append(b, 0xde, byte(n>>8), byte(n))
	}
	return append(b, 0xdf, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func appendArrayLen(b []byte, n int) []byte {
	switch {
	case n < 16:
		return append(b, 0x90|byte(n))
	case n <= math.MaxUint16:
		return append(b, 0xdc, byte(n>>8), byte(n))
	}
	return append(b, 0xdd, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

func appendStr(b []byte, s string) []byte {
	n := len(s)
	switch {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = append(b, 0xda, byte(n>>8), byte(n))
	default:
		b = append(b, 0xdb, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, s...)
}

func appendBin(b []byte, v []byte) []byte {
	n := len(v)
	switch {
	case n < 256:
		b = append(b, 0xc4, byte(n))
	case n <= math.MaxUint16:
		b = append(b, 0xc5, byte(n>>8), byte(n))
	default:
		b = append(b, 0xc6, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
	}
	return append(b, v...)
}

func appendUint(b []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(b, byte(n))
	case n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return append(b, 0xcd, byte(n>>8), byte(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xcf), n)
}

func appendInt(b []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(b, uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return append(b, 0xd1, byte(n>>8), byte(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

func appendFloat64(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xcb), math.Float64bits(f))
}

// appendValue appends one value of a tool's input or metadata. The types
// a decoded JSON or msgpack object holds (a json.Number as its
// toolkit.NumberValue, in typed slices and maps too: toolkit.NumberValues)
// are written here; any other Go value (a struct, a time.Time, a named
// type, a []string) is written by the msgpack library.
func appendValue(b []byte, v any) ([]byte, error) { return appendValueAt(b, v, 0) }

// maxEncodeDepth bounds the nesting appendValue follows: far deeper than
// any reader takes (MaxDepth), so only a value that holds itself (in
// process; no decoder gives one) reaches it, which would otherwise
// recurse until the stack overflows, a crash no recover catches.
const maxEncodeDepth = 10000

var errEncodeTooDeep = fmt.Errorf("msgpack: the value is nested deeper than %d", maxEncodeDepth)

// maxEncodedBytes bounds what one message's encoding may hold: eight
// times the largest payload a NATS server is advised to allow (8 MiB),
// the default bound of a call's output (toolkit.DefaultMaxResultBytes),
// so no message a connection could carry is refused. A value met twice
// is written twice, and one that doubles at each level (a list holding
// the same list twice, forty deep) would otherwise be written whole.
const maxEncodedBytes = 64 << 20

var errEncodeTooLarge = fmt.Errorf("msgpack: the value would encode to more than %d MiB", maxEncodedBytes>>20)

// appendValueAt is appendValue of a value depth maps and slices down.
func appendValueAt(b []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return appendNil(b), nil
	case string:
		return appendStr(b, x), nil
	case bool:
		return appendBool(b, x), nil
	case float64:
		return appendFloat64(b, x), nil
	case float32:
		return binary.BigEndian.AppendUint32(append(b, 0xca), math.Float32bits(x)), nil
	case int:
		return appendInt(b, int64(x)), nil
	case int64:
		return appendInt(b, x), nil
	case int32:
		return appendInt(b, int64(x)), nil
	case int16:
		return appendInt(b, int64(x)), nil
	case int8:
		return appendInt(b, int64(x)), nil
	case uint:
		return appendUint(b, uint64(x)), nil
	case uint64:
		return appendUint(b, x), nil
	case uint32:
		return appendUint(b, uint64(x)), nil
	case uint16:
		return appendUint(b, uint64(x)), nil
	case uint8:
		return appendUint(b, uint64(x)), nil
	case []byte:
		if x == nil {
			return appendNil(b), nil
		}
		return appendBin(b, x), nil
	case []any:
		if x == nil {
			return appendNil(b), nil
		}
		if depth >= maxEncodeDepth {
			return b, errEncodeTooDeep
		}
		b = appendArrayLen(b, len(x))
		var err error
		for _, e := range x {
			if len(b) > maxEncodedBytes {
				return b, errEncodeTooLarge
			}
			if b, err = appendValueAt(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return b, nil
	case map[string]any:
		return appendMapAt(b, x, depth)
	case json.Number:
		// A number to its caller (a decoder's UseNumber), which
		// encoding/json writes bare and the library as a string.
		n, err := toolkit.NumberValue(x)
		if err != nil {
			return b, err
		}
		return appendValueAt(b, n, depth)
	}
	// A typed slice or map that holds a json.Number comes back as the
	// []any or map[string]any written above; the library would write
	// the number as a string. One that holds itself is refused here,
	// where the library would recurse until the stack overflows.
	nv, err := toolkit.NumberValues(v)
	if errors.Is(err, toolkit.ErrNestedTooDeep) {
		return b, errEncodeTooDeep
	}
	if err != nil {
		return b, err
	}
	switch nv.(type) {
	case []any, map[string]any:
		return appendValueAt(b, nv, depth)
	}
	return appendLibrary(b, v)
}

// appendMap appends a map as the library does (nil is nil).
func appendMap(b []byte, m map[string]any) ([]byte, error) { return appendMapAt(b, m, 0) }

// appendMapAt is appendMap of a map depth maps and slices down.
func appendMapAt(b []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return appendNil(b), nil
	}
	if depth >= maxEncodeDepth {
		return b, errEncodeTooDeep
	}
	b = appendMapLen(b, len(m))
	var err error
	for k, v := range m {
		if len(b) > maxEncodedBytes {
			return b, errEncodeTooLarge
		}
		if b, err = appendValueAt(appendStr(b, k), v, depth+1); err != nil {
			return b, err
		}
	}
	return b, nil
}

// appendMapExtra appends m with the entries of extra (and its Next ones)
// written into it (replacing keys of the same name) without changing m;
// nil extra is appendMap. A map that ends up empty is written as nil, as
// the library writes an absent one.
func appendMapExtra(b []byte, m map[string]any, extra *MetaEntry) ([]byte, error) {
	if extra == nil {
		return appendMap(b, m)
	}
	n := len(m)
	for e := extra; e != nil; e = e.Next {
		if _, dup := m[e.Key]; !dup {
			n++
		}
	}
	b = appendMapLen(b, n)
	var err error
	for e := extra; e != nil; e = e.Next {
		if b, err = appendValue(appendStr(b, e.Key), e.Value); err != nil {
			return b, err
		}
	}
	for k, v := range m {
		if extra.has(k) {
			continue
		}
		if b, err = appendValue(appendStr(b, k), v); err != nil {
			return b, err
		}
	}
	return b, nil
}

// has reports whether key is the key of e or of one of its Next entries.
func (e *MetaEntry) has(key string) bool {
	for ; e != nil; e = e.Next {
		if e.Key == key {
			return true
		}
	}
	return false
}

func appendStrMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return appendNil(b)
	}
	b = appendMapLen(b, len(m))
	for k, v := range m {
		b = appendStr(appendStr(b, k), v)
	}
	return b
}

func appendStrSlice(b []byte, s []string) []byte {
	if s == nil {
		return appendNil(b)
	}
	b = appendArrayLen(b, len(s))
	for _, v := range s {
		b = appendStr(b, v)
	}
	return b
}

var libPool = sync.Pool{New: func() any {
	enc := msgpack.NewEncoder(nil)
	enc.UseCompactInts(true)
	return &libEncoder{enc: enc}
}}

type libEncoder struct {
	buf libBuffer
	enc *msgpack.Encoder
}

// The msgpack library follows a value (a struct, a pointer, a
// CustomEncoder) as deep as it goes, with no bound of its own: one that
// holds itself would recurse until the stack overflows, a crash no
// recover catches. The buffer it writes to counts its writes and, every
// libCheckEvery of them, refuses to go on (a panic errPanicked
// recovers as errEncodeTooDeep) once the goroutine is libMaxFrames calls
// deep: more than maxEncodeDepth levels of the library take (each level
// up to 5 calls, and a write or more), far less than the stack holds.
// A look walks the stack, up to libMaxFrames calls, so it comes after
// half as many writes: the looks walk at most two calls per write
// however deep the value, and one holding itself is refused after
// walking a few times the bound in all, not once per few thousand
// writes all the way down. What the library follows without writing
// (pointers, interfaces), the watch never sees: walkValue bounds it.
// Past maxEncodedBytes the buffer refuses any write (errEncodeTooLarge):
// what a type's own encoder writes, or a list of the same long list
// many times, no walk counts.
const (
	libMaxFrames  = 8 * maxEncodeDepth
	libCheckEvery = libMaxFrames / 2
)

// libBuffer is the library's buffer, which bounds its depth and size.
type libBuffer struct {
	bytes.Buffer
	writes int
}

// tooDeep and tooLarge are the panics of a libBuffer too deep and too
// large.
type (
	tooDeep  struct{}
	tooLarge struct{}
)

// check looks before n more bytes are written.
func (w *libBuffer) check(n int) {
	if w.Len()+n > maxEncodedBytes {
		panic(tooLarge{})
	}
	if w.writes++; w.writes%libCheckEvery != 0 {
		return
	}
	if libLooked != nil {
		libLooked()
	}
	var pc [1]uintptr
	if runtime.Callers(libMaxFrames, pc[:]) > 0 {
		panic(tooDeep{})
	}
}

// libLooked, when set (tests), is called at each look at the depth.
var libLooked func()

func (w *libBuffer) Write(p []byte) (int, error) {
	w.check(len(p))
	return w.Buffer.Write(p)
}

func (w *libBuffer) WriteByte(c byte) error {
	w.check(1)
	return w.Buffer.WriteByte(c)
}

func (w *libBuffer) WriteString(s string) (int, error) {
	w.check(len(s))
	return w.Buffer.WriteString(s)
}

// libKeptBytes is the largest buffer an encoder back in libPool keeps.
const libKeptBytes = 1 << 20

// appendLibrary appends the msgpack library's encoding of a Go value the
// hand-written encoder does not know, once walkValue has followed it.
func appendLibrary(b []byte, v any) (_ []byte, err error) {
	defer errPanicked(&err)
	if err := walkValue(libRules, v); err != nil {
		return b, err
	}
	le := libPool.Get().(*libEncoder)
	defer func() {
		if le.buf.Cap() > libKeptBytes {
			le.buf = libBuffer{} // a pool keeps no large value's buffer
		}
		libPool.Put(le)
	}()
	le.buf.Reset()
	le.buf.writes = 0
	le.enc.Reset(&le.buf)
	le.enc.UseCompactInts(true)
	if err := le.enc.Encode(v); err != nil {
		return b, err
	}
	return append(b, le.buf.Bytes()...), nil
}

// Decoding.

var errShort = errors.New("msgpack: unexpected end of body")

// decoder reads msgpack from a byte slice. With shared set, decoded
// strings share the body's memory instead of copying it: only for bodies
// nobody writes to afterwards (a received message's payload).
type decoder struct {
	b      []byte
	i      int
	shared bool
	depth  int
	left   int // bytes the body may still decode to (see Budget)
	spares     // one-element slices allocated with their parent (wire_gen.go)
}

// Estimated costs of decoded values, charged against a body's Budget
// before they are allocated. The same estimate holds for JSON
// (checkJSON), where encoding/json allocates the same shapes.
const (
	costMap      = 64 // a map[string]any and its interface
	costMapEntry = 48 // a key's string header, the value's interface, slot overhead
	costSlice    = 24 // a slice header
	costElem     = 16 // an element's interface
	costNumber   = 8  // a boxed number
)

// Budget is how many bytes a body of n bytes may decode to: 16 times its
// size, plus 64 KiB. A body built to inflate (a megabyte of empty maps
// decodes to tens of megabytes) is refused before it is allocated.
func Budget(n int) int { return 16*n + 64<<10 }

// charge takes n bytes from the decoding budget.
func (d *decoder) charge(n int) error {
	if d.left -= n; d.left < 0 {
		return fmt.Errorf("msgpack: the body of %d bytes would decode to more than %d bytes", len(d.b), Budget(len(d.b)))
	}
	return nil
}

func (d *decoder) byte1() (byte, error) {
	if d.i >= len(d.b) {
		return 0, errShort
	}
	c := d.b[d.i]
	d.i++
	return c, nil
}

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.i {
		return nil, errShort
	}
	s := d.b[d.i : d.i+n : d.i+n]
	d.i += n
	return s, nil
}

// length reads the big-endian length of size bytes after a code. Each of
// the n elements (or bytes) it announces takes at least per bytes, so a
// claim of more than the body holds is refused before anything is
// allocated for it.
func (d *decoder) length(size, per int) (int, error) {
	p, err := d.take(size)
	if err != nil {
		return 0, err
	}
	var n uint64
	switch size {
	case 1:
		n = uint64(p[0])
	case 2:
		n = uint64(binary.BigEndian.Uint16(p))
	default:
		n = uint64(binary.BigEndian.Uint32(p))
	}
	if n*uint64(per) > uint64(len(d.b)-d.i) {
		return 0, fmt.Errorf("msgpack: a length of %d exceeds the %d bytes left", n, len(d.b)-d.i)
	}
	return int(n), nil
}

func invalid(c byte, what string) error {
	if c == 0xc1 {
		return fmt.Errorf("msgpack: invalid code 0xc1 decoding %s", what)
	}
	return fmt.Errorf("msgpack: unexpected code 0x%02x decoding %s", c, what)
}

// mapLen reads a map header; nil is -1.
func (d *decoder) mapLen() (int, error) {
	c, err := d.byte1()
	if err != nil {
		return 0, err
	}
	switch {
	case c >= 0x80 && c <= 0x8f:
		n := int(c & 0x0f)
		if 2*n > len(d.b)-d.i {
			return 0, errShort
		}
		return n, nil
	case c == 0xc0:
		return -1, nil
	case c == 0xde:
		return d.length(2, 2)
	case c == 0xdf:
		return d.length(4, 2)
	}
	return 0, invalid(c, "a map")
}

// arrayLen reads an array header; nil is -1.
func (d *decoder) arrayLen() (int, error) {
	c, err := d.byte1()
	if err != nil {
		return 0, err
	}
	switch {
	case c >= 0x90 && c <= 0x9f:
		n := int(c & 0x0f)
		if n > len(d.b)-d.i {
			return 0, errShort
		}
		return n, nil
	case c == 0xc0:
		return -1, nil
	case c == 0xdc:
		return d.length(2, 1)
	case c == 0xdd:
		return d.length(4, 1)
	}
	return 0, invalid(c, "an array")
}

// rawStr reads a str or bin (nil is empty) and returns its bytes.
func (d *decoder) rawStr() ([]byte, error) {
	c, err := d.byte1()
	if err != nil {
		return nil, err
	}
	n := 0
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = int(c & 0x1f)
	case c == 0xc0:
		return nil, nil
	case c == 0xd9 || c == 0xc4:
		n, err = d.length(1, 1)
	case c == 0xda || c == 0xc5:
		n, err = d.length(2, 1)
	case c == 0xdb || c == 0xc6:
		n, err = d.length(4, 1)
	default:
		return nil, invalid(c, "a string")
	}
	if err != nil {
		return nil, err
	}
	return d.take(n)
}

// keep turns bytes of the body into a string.
func (d *decoder) keep(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	if d.shared {
		return unsafe.String(&p[0], len(p))
	}
	return string(p)
}

func (d *decoder) str() (string, error) {
	p, err := d.rawStr()
	if err != nil {
		return "", err
	}
	if !d.shared {
		if err := d.charge(len(p)); err != nil {
			return "", err
		}
	}
	return d.keep(p), nil
}

// key reads a map key; interned keys allocate nothing.
func (d *decoder) key() (string, error) {
	p, err := d.rawStr()
	if err != nil {
		return "", err
	}
	if s, ok := internKey(p); ok {
		return s, nil
	}
	if !d.shared {
		if err := d.charge(len(p)); err != nil {
			return "", err
		}
	}
	return d.keep(p), nil
}

// internKey returns the constant spelling of the metadata keys the bus
// itself writes.
func internKey(p []byte) (string, bool) {
	switch string(p) {
	case MetaWorker:
		return MetaWorker, true
	case MetaLostChunks:
		return MetaLostChunks, true
	case MetaRetryAfterMS:
		return MetaRetryAfterMS, true
	case MetaGroupsRevision:
		return MetaGroupsRevision, true
	case MetaActiveGroups:
		return MetaActiveGroups, true
	}
	return "", false
}

func (d *decoder) boolean() (bool, error) {
	c, err := d.byte1()
	if err != nil {
		return false, err
	}
	switch c {
	case 0xc0, 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	}
	return false, invalid(c, "a bool")
}

// intBits reads any integer (nil is 0) as the library does: the bits of
// its value, sign-extended for the signed codes.
func (d *decoder) intBits(what string) (uint64, error) {
	c, err := d.byte1()
	if err != nil {
		return 0, err
	}
	if c <= 0x7f || c >= 0xe0 {
		return uint64(int64(int8(c))), nil
	}
	var p []byte
	switch c {
	case 0xc0:
		return 0, nil
	case 0xcc, 0xd0:
		p, err = d.take(1)
	case 0xcd, 0xd1:
		p, err = d.take(2)
	case 0xce, 0xd2:
		p, err = d.take(4)
	case 0xcf, 0xd3:
		p, err = d.take(8)
	default:
		return 0, invalid(c, what)
	}
	if err != nil {
		return 0, err
	}
	switch c {
	case 0xcc:
		return uint64(p[0]), nil
	case 0xd0:
		return uint64(int64(int8(p[0]))), nil
	case 0xcd:
		return uint64(binary.BigEndian.Uint16(p)), nil
	case 0xd1:
		return uint64(int64(int16(binary.BigEndian.Uint16(p)))), nil
	case 0xce:
		return uint64(binary.BigEndian.Uint32(p)), nil
	case 0xd2:
		return uint64(int64(int32(binary.BigEndian.Uint32(p)))), nil
	}
	return binary.BigEndian.Uint64(p), nil
}

func (d *decoder) uint() (uint64, error) { return d.intBits("an unsigned integer") }

func (d *decoder) int() (int64, error) {
	n, err := d.intBits("an integer")
	return int64(n), err
}

// float reads a float or, as the library does, any integer.
func (d *decoder) float() (float64, error) {
	if d.i < len(d.b) {
		switch d.b[d.i] {
		case 0xca:
			d.i++
			p, err := d.take(4)
			if err != nil {
				return 0, err
			}
			return float64(math.Float32frombits(binary.BigEndian.Uint32(p))), nil
		case 0xcb:
			d.i++
			p, err := d.take(8)
			if err != nil {
				return 0, err
			}
			return math.Float64frombits(binary.BigEndian.Uint64(p)), nil
		}
	}
	n, err := d.intBits("a number")
	return float64(int64(n)), err
}

// isNil consumes a nil if one is next.
func (d *decoder) isNil() bool {
	if d.i < len(d.b) && d.b[d.i] == 0xc0 {
		d.i++
		return true
	}
	return false
}

func (d *decoder) enter() error {
	if d.depth++; d.depth > MaxDepth {
		return fmt.Errorf("msgpack: nested deeper than %d", MaxDepth)
	}
	return nil
}

func (d *decoder) leave() { d.depth-- }

// object reads the header of a struct's map and enters it; nil is an
// empty map. Call leave after the last field.
func (d *decoder) object() (int, error) {
	n, err := d.mapLen()
	if err != nil {
		return 0, err
	}
	return max(n, 0), d.enter()
}

// value reads one value as the library's loose interface decoding does:
// integers as int64 (uint64 for the unsigned codes), floats as float64,
// str and bin as string, arrays as []any, maps as map[string]any, the
// timestamp extension as time.Time.
func (d *decoder) value() (any, error) {
	if d.i >= len(d.b) {
		return nil, errShort
	}
	c := d.b[d.i]
	switch {
	case c <= 0x7f:
		d.i++
		return int64(c), nil // boxed without allocating
	case c >= 0xe0:
		if err := d.charge(costNumber); err != nil {
			return nil, err
		}
		d.i++
		return int64(int8(c)), nil
	case c >= 0xa0 && c <= 0xbf, c == 0xd9, c == 0xda, c == 0xdb, c == 0xc4, c == 0xc5, c == 0xc6:
		return d.str()
	case c >= 0x80 && c <= 0x8f, c == 0xde, c == 0xdf:
		return d.mapValue()
	case c >= 0x90 && c <= 0x9f, c == 0xdc, c == 0xdd:
		return d.arrayValue()
	}
	switch c {
	case 0xc0:
		d.i++
		return nil, nil
	case 0xc2, 0xc3:
		return d.boolean()
	}
	if err := d.charge(costNumber); err != nil {
		return nil, err
	}
	switch c {
	case 0xca, 0xcb:
		return d.float()
	case 0xcc, 0xcd, 0xce, 0xcf:
		return d.uint()
	case 0xd0, 0xd1, 0xd2, 0xd3:
		return d.int()
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xc7, 0xc8, 0xc9:
		return d.ext()
	}
	d.i++
	return nil, invalid(c, "a value")
}

// ext reads an extension value: only the timestamp extension (-1) has a
// meaning here, as in the library's default registry.
func (d *decoder) ext() (any, error) {
	c, _ := d.byte1()
	var n int
	var err error
	switch c {
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		n = 1 << (c - 0xd4)
	case 0xc7:
		n, err = d.length(1, 1)
	case 0xc8:
		n, err = d.length(2, 1)
	default:
		n, err = d.length(4, 1)
	}
	if err != nil {
		return nil, err
	}
	typ, err := d.byte1()
	if err != nil {
		return nil, err
	}
	p, err := d.take(n)
	if err != nil {
		return nil, err
	}
	if int8(typ) != -1 {
		return nil, fmt.Errorf("msgpack: unknown ext id=%d", int8(typ))
	}
	switch n {
	case 4:
		return time.Unix(int64(binary.BigEndian.Uint32(p)), 0), nil
	case 8:
		sec := binary.BigEndian.Uint64(p)
		return time.Unix(int64(sec&0x3ffffffff), int64(sec>>34)), nil
	case 12:
		return time.Unix(int64(binary.BigEndian.Uint64(p[4:])), int64(binary.BigEndian.Uint32(p))), nil
	}
	return nil, fmt.Errorf("msgpack: invalid ext len=%d decoding time", n)
}

func (d *decoder) arrayValue() (any, error) {
	n, err := d.arrayLen()
	if err != nil {
		return nil, err
	}
	if err := d.charge(costSlice + n*costElem); err != nil {
		return nil, err
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for i := range out {
		if out[i], err = d.value(); err != nil {
			return nil, err
		}
	}
	d.leave()
	return out, nil
}

// mapValue reads a map[string]any; nil is a nil map.
func (d *decoder) mapValue() (map[string]any, error) {
	n, err := d.mapLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if err := d.charge(costMap + n*costMapEntry); err != nil {
		return nil, err
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	for range n {
		k, err := d.key()
		if err != nil {
			return nil, err
		}
		if m[k], err = d.value(); err != nil {
			return nil, err
		}
	}
	d.leave()
	return m, nil
}

func (d *decoder) strMap() (map[string]string, error) {
	n, err := d.mapLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if err := d.charge(costMap + n*costMapEntry); err != nil {
		return nil, err
	}
	m := make(map[string]string, n)
	for range n {
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if m[k], err = d.str(); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (d *decoder) strSlice() ([]string, error) {
	n, err := d.arrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if err := d.charge(costSlice + n*costElem); err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i := range out {
		if out[i], err = d.str(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// skip consumes one value.
func (d *decoder) skip() error {
	_, err := d.value()
	return err
}

// fieldError names the field whose value could not be decoded.
func fieldError(field string, err error) error {
	return fmt.Errorf("%s: %w", field, err)
}

// scanThreshold is the body size from which a msgpack body is walked
// once before it is decoded: a smaller body cannot make the decoder
// allocate much before its budget stops it.
const scanThreshold = 16 << 10

// scan walks one msgpack value without building it and charges what
// decoding it would allocate against the budget, so that a large body
// built to inflate is refused before anything is allocated for it. It
// checks lengths and nesting as the decoder does.
func (d *decoder) scan() error {
	_, err := d.scanEnd()
	return err
}

// scanEnd is scan, returning where the value ends.
func (d *decoder) scanEnd() (int, error) {
	var stackBuf [MaxDepth + 1]int
	stack := append(stackBuf[:0], 1) // values still expected at each open level
	pos := d.i
	data := d.b
	for len(stack) > 0 {
		if stack[len(stack)-1] == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		stack[len(stack)-1]--
		if pos >= len(data) {
			return 0, errShort
		}
		c := data[pos]
		pos++
		skip, elems, lenSize, cost := 0, 0, 0, 0
		switch {
		case c <= 0x7f || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0xe0: // a negative fixint, boxed
			cost = costNumber
		case c <= 0x8f: // fixmap
			elems = 2 * int(c&0x0f)
			cost = costMap + int(c&0x0f)*costMapEntry
		case c <= 0x9f: // fixarray
			elems = int(c & 0x0f)
			cost = costSlice + elems*costElem
		case c <= 0xbf: // fixstr
			skip = int(c & 0x1f)
		case c == 0xc4 || c == 0xd9 || c == 0xc7: // bin8, str8, ext8
			lenSize = 1
		case c == 0xc5 || c == 0xda || c == 0xc8: // bin16, str16, ext16
			lenSize = 2
		case c == 0xc6 || c == 0xdb || c == 0xc9: // bin32, str32, ext32
			lenSize = 4
		case c == 0xca || c == 0xce || c == 0xd2:
			skip, cost = 4, costNumber
		case c == 0xcb || c == 0xcf || c == 0xd3:
			skip, cost = 8, costNumber
		case c == 0xcc || c == 0xd0:
			skip, cost = 1, costNumber
		case c == 0xcd || c == 0xd1:
			skip, cost = 2, costNumber
		case c >= 0xd4 && c <= 0xd8: // fixext: type byte + 1..16 bytes
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc || c == 0xde: // array16, map16
			lenSize = 2
		case c == 0xdd || c == 0xdf: // array32, map32
			lenSize = 4
		default: // 0xc1 is never used
			return 0, invalid(c, "a value")
		}
		if lenSize > 0 {
			if len(data)-pos < lenSize {
				return 0, errShort
			}
			var n int
			switch lenSize {
			case 1:
				n = int(data[pos])
			case 2:
				n = int(binary.BigEndian.Uint16(data[pos:]))
			default:
				n = int(binary.BigEndian.Uint32(data[pos:]))
			}
			pos += lenSize
			if n > len(data)-pos {
				return 0, fmt.Errorf("msgpack: a length of %d exceeds the %d bytes left", n, len(data)-pos)
			}
			switch c {
			case 0xdc, 0xdd:
				elems, cost = n, costSlice+n*costElem
			case 0xde, 0xdf:
				elems, cost = 2*n, costMap+n*costMapEntry
			case 0xc7, 0xc8, 0xc9:
				skip = n + 1 // ext: type byte + data
			default:
				skip = n
			}
		}
		if skip > len(data)-pos {
			return 0, errShort
		}
		if !d.shared && c >= 0xa0 && c <= 0xbf || !d.shared && (c == 0xd9 || c == 0xda || c == 0xdb || c == 0xc4 || c == 0xc5 || c == 0xc6) {
			cost += skip
		}
		if err := d.charge(cost); err != nil {
			return 0, err
		}
		pos += skip
		if elems > 0 {
			if len(stack) > MaxDepth {
				return 0, fmt.Errorf("msgpack: nested deeper than %d", MaxDepth)
			}
			if elems > len(data)-pos {
				return 0, fmt.Errorf("msgpack: %d elements claimed, %d bytes left", elems, len(data)-pos)
			}
			stack = append(stack, elems)
		}
	}
	return pos, nil
}
