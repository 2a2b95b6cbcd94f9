package bus

import (
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"unsafe"

	"github.com/toolbus/toolbus/toolkit"
)

// Hand-written msgpack for the hot types, Request and Frame, working on
// byte slices. The encoder writes exactly what the msgpack library writes
// with compact integers (same keys, empty fields omitted, same widths), so
// either side may be the library. The decoder handles the shapes these
// encoders and other clients produce; on anything else (an extension type,
// a number of an unusual width where a field wants another, bad input) it
// gives up and the body is decoded again by the library (msgpackref.go),
// so it changes the cost of a decode, never its result.

// Encoding.

// encBuf is a pooled encoding buffer: frames and requests are encoded into
// one and published from it (nats.Conn.Publish copies the bytes).
type encBuf struct{ b []byte }

var bufPool = sync.Pool{New: func() any { return &encBuf{b: make([]byte, 0, 1024)} }}

func getBuf() *encBuf { return bufPool.Get().(*encBuf) }

// putBuf returns a buffer to the pool, unless it grew large.
func putBuf(e *encBuf) {
	if cap(e.b) <= 64<<10 {
		e.b = e.b[:0]
		bufPool.Put(e)
	}
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
// a decoded JSON or msgpack object holds are written here; anything else
// is left to the library.
func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, 0xc0), nil
	case string:
		return appendStr(b, x), nil
	case bool:
		if x {
			return append(b, 0xc3), nil
		}
		return append(b, 0xc2), nil
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
			return append(b, 0xc0), nil
		}
		return appendBin(b, x), nil
	case []any:
		if x == nil {
			return append(b, 0xc0), nil
		}
		b = appendArrayLen(b, len(x))
		var err error
		for _, e := range x {
			if b, err = appendValue(b, e); err != nil {
				return b, err
			}
		}
		return b, nil
	case map[string]any:
		return appendMap(b, x)
	}
	return appendRef(b, v)
}

// appendMap appends a map as the library's EncodeMap does (nil is nil).
func appendMap(b []byte, m map[string]any) ([]byte, error) {
	if m == nil {
		return append(b, 0xc0), nil
	}
	b = appendMapLen(b, len(m))
	var err error
	for k, v := range m {
		b = appendStr(b, k)
		if b, err = appendValue(b, v); err != nil {
			return b, err
		}
	}
	return b, nil
}

func appendRequest(b []byte, r *Request) ([]byte, error) {
	n := 1
	if r.Name != "" {
		n++
	}
	if len(r.Input) > 0 {
		n++
	}
	if r.Session != "" {
		n++
	}
	b = appendMapLen(b, n)
	b = appendStr(appendStr(b, "id"), r.ID)
	if r.Name != "" {
		b = appendStr(appendStr(b, "name"), r.Name)
	}
	if len(r.Input) > 0 {
		var err error
		if b, err = appendMap(appendStr(b, "input"), r.Input); err != nil {
			return b, err
		}
	}
	if r.Session != "" {
		b = appendStr(appendStr(b, "session"), r.Session)
	}
	return b, nil
}

// appendFrame appends a frame; extra, when not nil, is written into the
// final's metadata as well (the worker adds its instance without changing
// the response's map). A key of extra that the metadata has too is written
// once, with extra's value.
func appendFrame(b []byte, f *Frame, extra *metaEntry) ([]byte, error) {
	n := 3
	for _, set := range [...]bool{f.Chunk != nil, f.Progress != nil, f.Final != nil, f.Chunks != 0} {
		if set {
			n++
		}
	}
	b = appendMapLen(b, n)
	b = appendStr(appendStr(b, "kind"), string(f.Kind))
	b = appendStr(appendStr(b, "id"), f.ID)
	b = appendUint(appendStr(b, "seq"), f.Seq)
	var err error
	if c := f.Chunk; c != nil {
		b = appendStr(b, "chunk")
		m := 0
		for _, set := range [...]bool{len(c.Content) > 0, c.State != "", len(c.Metadata) > 0} {
			if set {
				m++
			}
		}
		b = appendMapLen(b, m)
		if len(c.Content) > 0 {
			b = appendBlocks(appendStr(b, "content"), c.Content)
		}
		if c.State != "" {
			b = appendStr(appendStr(b, "state"), string(c.State))
		}
		if len(c.Metadata) > 0 {
			if b, err = appendMap(appendStr(b, "metadata"), c.Metadata); err != nil {
				return b, err
			}
		}
	}
	if p := f.Progress; p != nil {
		b = appendStr(b, "progress")
		m := 1
		if p.Total != 0 {
			m++
		}
		if p.Message != "" {
			m++
		}
		b = appendMapLen(b, m)
		b = appendFloat64(appendStr(b, "progress"), p.Progress)
		if p.Total != 0 {
			b = appendFloat64(appendStr(b, "total"), p.Total)
		}
		if p.Message != "" {
			b = appendStr(appendStr(b, "message"), p.Message)
		}
	}
	if r := f.Final; r != nil {
		b = appendStr(b, "final")
		meta := len(r.Metadata)
		if extra != nil {
			if _, dup := r.Metadata[extra.key]; !dup {
				meta++
			}
		}
		m := 2
		for _, set := range [...]bool{r.Code != "", len(r.Content) > 0, meta > 0} {
			if set {
				m++
			}
		}
		b = appendMapLen(b, m)
		b = appendStr(appendStr(b, "id"), r.ID)
		b = appendStr(appendStr(b, "state"), string(r.State))
		if r.Code != "" {
			b = appendStr(appendStr(b, "code"), string(r.Code))
		}
		if len(r.Content) > 0 {
			b = appendBlocks(appendStr(b, "content"), r.Content)
		}
		if meta > 0 {
			b = appendMapLen(appendStr(b, "metadata"), meta)
			if extra != nil {
				if b, err = appendValue(appendStr(b, extra.key), extra.value); err != nil {
					return b, err
				}
			}
			for k, v := range r.Metadata {
				if extra != nil && k == extra.key {
					continue
				}
				if b, err = appendValue(appendStr(b, k), v); err != nil {
					return b, err
				}
			}
		}
	}
	if f.Chunks != 0 {
		b = appendUint(appendStr(b, "chunks"), f.Chunks)
	}
	return b, nil
}

// metaEntry is one metadata key and value.
type metaEntry struct {
	key   string
	value any
}

func appendBlocks(b []byte, blocks []toolkit.Block) []byte {
	b = appendArrayLen(b, len(blocks))
	for i := range blocks {
		blk := &blocks[i]
		m := 1
		for _, s := range [...]string{blk.ID, blk.Text, blk.MediaType, blk.Data, blk.URL, blk.Name} {
			if s != "" {
				m++
			}
		}
		b = appendMapLen(b, m)
		b = appendStr(appendStr(b, "type"), string(blk.Type))
		if blk.ID != "" {
			b = appendStr(appendStr(b, "id"), blk.ID)
		}
		if blk.Text != "" {
			b = appendStr(appendStr(b, "text"), blk.Text)
		}
		if blk.MediaType != "" {
			b = appendStr(appendStr(b, "media_type"), blk.MediaType)
		}
		if blk.Data != "" {
			b = appendStr(appendStr(b, "data"), blk.Data)
		}
		if blk.URL != "" {
			b = appendStr(appendStr(b, "url"), blk.URL)
		}
		if blk.Name != "" {
			b = appendStr(appendStr(b, "name"), blk.Name)
		}
	}
	return b
}

// Decoding.

// errDecline makes the fast decoder hand the body to the library.
var errDecline = errors.New("msgpack: declined by the fast decoder")

// fastMaxDepth is the deepest nesting the fast decoder follows; deeper
// bodies go to the library (which allows maxDepth).
const fastMaxDepth = 32

// decoder reads msgpack from a byte slice. With alias set, decoded strings
// share the body's memory instead of copying it: only for bodies nobody
// writes to afterwards (a received message's payload).
type decoder struct {
	b     []byte
	i     int
	alias bool
	depth int
	spare []toolkit.Block // room for one block, used by the next blocks of one
}

type chunkBlock struct {
	c toolkit.Chunk
	b [1]toolkit.Block
}

// responseBlock is a response and its one block, allocated together.
type responseBlock struct {
	r toolkit.Response
	b [1]toolkit.Block
}

func (d *decoder) byte1() (byte, error) {
	if d.i >= len(d.b) {
		return 0, errDecline
	}
	c := d.b[d.i]
	d.i++
	return c, nil
}

func (d *decoder) take(n int) ([]byte, error) {
	if n < 0 || n > len(d.b)-d.i {
		return nil, errDecline
	}
	s := d.b[d.i : d.i+n : d.i+n]
	d.i += n
	return s, nil
}

// length reads the big-endian length of size bytes after a code.
func (d *decoder) length(size int) (int, error) {
	p, err := d.take(size)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return int(p[0]), nil
	case 2:
		return int(binary.BigEndian.Uint16(p)), nil
	}
	n := binary.BigEndian.Uint32(p)
	if uint64(n) > uint64(len(d.b)) {
		return 0, errDecline
	}
	return int(n), nil
}

// mapLen reads a map header; nil is -1.
func (d *decoder) mapLen() (int, error) {
	c, err := d.byte1()
	if err != nil {
		return 0, err
	}
	switch {
	case c >= 0x80 && c <= 0x8f:
		return int(c & 0x0f), nil
	case c == 0xc0:
		return -1, nil
	case c == 0xde:
		return d.length(2)
	case c == 0xdf:
		return d.length(4)
	}
	return 0, errDecline
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
		n, err = d.length(1)
	case c == 0xda || c == 0xc5:
		n, err = d.length(2)
	case c == 0xdb || c == 0xc6:
		n, err = d.length(4)
	default:
		return nil, errDecline
	}
	if err != nil {
		return nil, err
	}
	return d.take(n)
}

// key reads a map key: a str or bin, not nil.
func (d *decoder) key() ([]byte, error) {
	if d.i < len(d.b) && d.b[d.i] == 0xc0 {
		return nil, errDecline
	}
	return d.rawStr()
}

func (d *decoder) str() (string, error) {
	p, err := d.rawStr()
	if err != nil || len(p) == 0 {
		return "", err
	}
	if d.alias {
		return unsafe.String(&p[0], len(p)), nil
	}
	return string(p), nil
}

// known returns the constant spelling of the wire's enumerated strings, so
// decoding them allocates nothing.
var known = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{
		string(KindChunk), string(KindProgress), string(KindHeartbeat), string(KindFinal),
		string(toolkit.StateRunning), string(toolkit.StateSuccess), string(toolkit.StateError),
		string(toolkit.StateInterrupted), string(toolkit.StateDenied),
		string(toolkit.BlockText), string(toolkit.BlockData), MetaWorker, MetaLostChunks, MetaRetryAfterMS,
		toolkit.MetaGroupsRevision,
	} {
		m[s] = s
	}
	for _, c := range toolkit.Codes {
		m[string(c)] = string(c)
	}
	return m
}()

// enum reads a string that is usually one of the known constants.
func (d *decoder) enum() (string, error) {
	p, err := d.rawStr()
	if err != nil || len(p) == 0 {
		return "", err
	}
	if s, ok := known[string(p)]; ok {
		return s, nil
	}
	if d.alias {
		return unsafe.String(&p[0], len(p)), nil
	}
	return string(p), nil
}

// uint reads a non-negative integer written as a positive fixint or a
// uint.
func (d *decoder) uint() (uint64, error) {
	c, err := d.byte1()
	if err != nil {
		return 0, err
	}
	if c <= 0x7f {
		return uint64(c), nil
	}
	var p []byte
	switch c {
	case 0xcc:
		p, err = d.take(1)
	case 0xcd:
		p, err = d.take(2)
	case 0xce:
		p, err = d.take(4)
	case 0xcf:
		p, err = d.take(8)
	default:
		return 0, errDecline
	}
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, x := range p {
		n = n<<8 | uint64(x)
	}
	return n, nil
}

func (d *decoder) float() (float64, error) {
	if d.i < len(d.b) {
		switch c := d.b[d.i]; {
		case c <= 0x7f:
			d.i++
			return float64(c), nil
		case c == 0xca:
			d.i++
			p, err := d.take(4)
			if err != nil {
				return 0, err
			}
			return float64(math.Float32frombits(binary.BigEndian.Uint32(p))), nil
		case c == 0xcb:
			d.i++
			p, err := d.take(8)
			if err != nil {
				return 0, err
			}
			return math.Float64frombits(binary.BigEndian.Uint64(p)), nil
		}
	}
	return 0, errDecline
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
	if d.depth++; d.depth > fastMaxDepth {
		return errDecline
	}
	return nil
}

// value reads one value as the library's loose interface decoding does:
// integers as int64 (uint64 for the uint codes), floats as float64, str
// and bin as string, arrays as []any, maps as map[string]any.
func (d *decoder) value() (any, error) {
	c, err := d.byte1()
	if err != nil {
		return nil, err
	}
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c >= 0xa0 && c <= 0xbf, c == 0xd9, c == 0xda, c == 0xdb, c == 0xc4, c == 0xc5, c == 0xc6:
		d.i--
		return d.str()
	case c >= 0x80 && c <= 0x8f, c == 0xde, c == 0xdf:
		d.i--
		return d.mapValue()
	case c >= 0x90 && c <= 0x9f:
		return d.array(int(c & 0x0f))
	}
	var p []byte
	switch c {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xdc, 0xdd:
		n, err := d.length(2 + 2*int(c-0xdc))
		if err != nil {
			return nil, err
		}
		return d.array(n)
	case 0xca:
		d.i--
		return d.float()
	case 0xcb:
		d.i--
		return d.float()
	case 0xcc, 0xcd, 0xce, 0xcf:
		d.i--
		return d.uint()
	case 0xd0:
		p, err = d.take(1)
		if err != nil {
			return nil, err
		}
		return int64(int8(p[0])), nil
	case 0xd1:
		p, err = d.take(2)
		if err != nil {
			return nil, err
		}
		return int64(int16(binary.BigEndian.Uint16(p))), nil
	case 0xd2:
		p, err = d.take(4)
		if err != nil {
			return nil, err
		}
		return int64(int32(binary.BigEndian.Uint32(p))), nil
	case 0xd3:
		p, err = d.take(8)
		if err != nil {
			return nil, err
		}
		return int64(binary.BigEndian.Uint64(p)), nil
	}
	return nil, errDecline // extension types and the unused code
}

func (d *decoder) array(n int) (any, error) {
	if n > len(d.b)-d.i {
		return nil, errDecline
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for i := range out {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	d.depth--
	return out, nil
}

// mapValue reads a map[string]any; nil is a nil map.
func (d *decoder) mapValue() (map[string]any, error) {
	n, err := d.mapLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if 2*n > len(d.b)-d.i {
		return nil, errDecline
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	for range n {
		k, err := d.rawStr() // the library reads keys with DecodeString: nil is ""
		if err != nil {
			return nil, err
		}
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if len(k) > 0 {
			if s, ok := known[string(k)]; ok {
				m[s] = v
				continue
			}
		}
		m[d.keep(k)] = v
	}
	d.depth--
	return m, nil
}

// keep turns bytes of the body into a string.
func (d *decoder) keep(p []byte) string {
	if len(p) == 0 {
		return ""
	}
	if d.alias {
		return unsafe.String(&p[0], len(p))
	}
	return string(p)
}

// object reads the header of a map of fields and returns the number of
// keys; nil is an empty map. Call done after the last field.
func (d *decoder) object() (int, error) {
	n, err := d.mapLen()
	if err != nil {
		return 0, err
	}
	if 2*n > len(d.b)-d.i {
		return 0, errDecline
	}
	return max(n, 0), d.enter()
}

func (d *decoder) done() { d.depth-- }

// skip consumes one value.
func (d *decoder) skip() error {
	_, err := d.value()
	return err
}

func (d *decoder) request(r *Request) error {
	n, err := d.object()
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, err = d.key(); err != nil {
			break
		}
		switch string(k) {
		case "id":
			r.ID, err = d.str()
		case "name":
			r.Name, err = d.str()
		case "input":
			r.Input, err = d.mapValue()
		case "session":
			r.Session, err = d.str()
		default:
			err = d.skip()
		}
	}
	d.done()
	return err
}

func (d *decoder) frame(f *Frame) error {
	n, err := d.object()
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, err = d.key(); err != nil {
			break
		}
		var s string
		switch string(k) {
		case "kind":
			s, err = d.enum()
			f.Kind = Kind(s)
		case "id":
			f.ID, err = d.str()
		case "seq":
			f.Seq, err = d.uint()
		case "chunks":
			f.Chunks, err = d.uint()
		case "chunk":
			if !d.isNil() {
				// A chunk and its one block (the usual case) in one
				// allocation.
				cb := new(chunkBlock)
				f.Chunk, d.spare = &cb.c, cb.b[:]
				err = d.chunk(f.Chunk)
				d.spare = nil
			}
		case "progress":
			if !d.isNil() {
				f.Progress = &toolkit.Progress{}
				err = d.progress(f.Progress)
			}
		case "final":
			if !d.isNil() {
				// A final and its one block in one allocation.
				rb := new(responseBlock)
				f.Final, d.spare = &rb.r, rb.b[:]
				err = d.response(f.Final)
				d.spare = nil
			}
		default:
			err = d.skip()
		}
	}
	d.done()
	return err
}

func (d *decoder) chunk(c *toolkit.Chunk) error {
	n, err := d.object()
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, err = d.key(); err != nil {
			break
		}
		var s string
		switch string(k) {
		case "content":
			c.Content, err = d.blocks()
		case "state":
			s, err = d.enum()
			c.State = toolkit.State(s)
		case "metadata":
			c.Metadata, err = d.mapValue()
		default:
			err = d.skip()
		}
	}
	d.done()
	return err
}

func (d *decoder) progress(p *toolkit.Progress) error {
	n, err := d.object()
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, err = d.key(); err != nil {
			break
		}
		switch string(k) {
		case "progress":
			p.Progress, err = d.float()
		case "total":
			p.Total, err = d.float()
		case "message":
			p.Message, err = d.str()
		default:
			err = d.skip()
		}
	}
	d.done()
	return err
}

func (d *decoder) response(r *toolkit.Response) error {
	n, err := d.object()
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, err = d.key(); err != nil {
			break
		}
		var s string
		switch string(k) {
		case "id":
			r.ID, err = d.str()
		case "state":
			s, err = d.enum()
			r.State = toolkit.State(s)
		case "code":
			s, err = d.enum()
			r.Code = toolkit.Code(s)
		case "content":
			r.Content, err = d.blocks()
		case "metadata":
			r.Metadata, err = d.mapValue()
		default:
			err = d.skip()
		}
	}
	d.done()
	return err
}

func (d *decoder) blocks() ([]toolkit.Block, error) {
	c, err := d.byte1()
	if err != nil {
		return nil, err
	}
	n := 0
	switch {
	case c >= 0x90 && c <= 0x9f:
		n = int(c & 0x0f)
	case c == 0xc0:
		return nil, nil
	case c == 0xdc:
		n, err = d.length(2)
	case c == 0xdd:
		n, err = d.length(4)
	default:
		return nil, errDecline
	}
	if err != nil || n == 0 {
		return nil, err
	}
	if n > len(d.b)-d.i {
		return nil, errDecline
	}
	var out []toolkit.Block
	if n == 1 && d.spare != nil {
		out, d.spare = d.spare[:1:1], nil
	} else {
		out = make([]toolkit.Block, n)
	}
	for i := range out {
		if err := d.block(&out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (d *decoder) block(b *toolkit.Block) error {
	n, err := d.object()
	for ; err == nil && n > 0; n-- {
		var k []byte
		if k, err = d.key(); err != nil {
			break
		}
		var s string
		switch string(k) {
		case "type":
			s, err = d.enum()
			b.Type = toolkit.BlockType(s)
		case "id":
			b.ID, err = d.str()
		case "text":
			b.Text, err = d.str()
		case "media_type":
			b.MediaType, err = d.str()
		case "data":
			b.Data, err = d.str()
		case "url":
			b.URL, err = d.str()
		case "name":
			b.Name, err = d.str()
		default:
			err = d.skip()
		}
	}
	d.done()
	return err
}

// unmarshalFrame decodes a msgpack frame body. alias: see decoder.
func unmarshalFrame(data []byte, f *Frame, alias bool) error {
	d := decoder{b: data, alias: alias}
	if err := d.frame(f); err == nil && d.i == len(data) {
		return nil
	}
	ref := new(Frame) // the library's decode keeps f off the heap this way
	err := refUnmarshalBody(data, ref)
	*f = *ref
	return err
}

// unmarshalRequest decodes a msgpack request body. alias: see decoder.
func unmarshalRequest(data []byte, r *Request, alias bool) error {
	d := decoder{b: data, alias: alias}
	if err := d.request(r); err == nil && d.i == len(data) {
		return nil
	}
	ref := new(Request)
	err := refUnmarshalBody(data, ref)
	*r = *ref
	return err
}
