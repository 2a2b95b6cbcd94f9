package bus

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxDepth bounds the nesting of arrays and maps in a msgpack body.
const maxDepth = 64

var errShort = errors.New("msgpack: unexpected end of body")

// checkMsgpack walks one msgpack value without building it and rejects
// what would make the decoder allocate far more than the body holds: a
// container claiming more elements than bytes remain, a string longer than
// the body, nesting deeper than maxDepth. The decoder preallocates from
// the claimed lengths, so without this a small hostile body could demand
// gigabytes.
func checkMsgpack(data []byte) error {
	var stackBuf [maxDepth]int
	stack := append(stackBuf[:0], 1) // values still expected at each open level
	pos := 0
	for len(stack) > 0 {
		if stack[len(stack)-1] == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		stack[len(stack)-1]--
		if pos >= len(data) {
			return errShort
		}
		c := data[pos]
		pos++
		skip, elems, lenSize := 0, 0, 0
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c <= 0x8f: // fixmap
			elems = 2 * int(c&0x0f)
		case c <= 0x9f: // fixarray
			elems = int(c & 0x0f)
		case c <= 0xbf: // fixstr
			skip = int(c & 0x1f)
		case c == 0xc4 || c == 0xd9 || c == 0xc7: // bin8, str8, ext8
			lenSize = 1
		case c == 0xc5 || c == 0xda || c == 0xc8: // bin16, str16, ext16
			lenSize = 2
		case c == 0xc6 || c == 0xdb || c == 0xc9: // bin32, str32, ext32
			lenSize = 4
		case c == 0xca || c == 0xce || c == 0xd2:
			skip = 4
		case c == 0xcb || c == 0xcf || c == 0xd3:
			skip = 8
		case c == 0xcc || c == 0xd0:
			skip = 1
		case c == 0xcd || c == 0xd1:
			skip = 2
		case c >= 0xd4 && c <= 0xd8: // fixext: type byte + 1..16 bytes
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc || c == 0xde: // array16, map16
			lenSize = 2
		case c == 0xdd || c == 0xdf: // array32, map32
			lenSize = 4
		default: // 0xc1 is never used
			return fmt.Errorf("msgpack: invalid code 0x%02x", c)
		}
		if lenSize > 0 {
			if len(data)-pos < lenSize {
				return errShort
			}
			var n uint64
			switch lenSize {
			case 1:
				n = uint64(data[pos])
			case 2:
				n = uint64(binary.BigEndian.Uint16(data[pos:]))
			case 4:
				n = uint64(binary.BigEndian.Uint32(data[pos:]))
			}
			pos += lenSize
			if n > uint64(len(data)-pos) {
				return fmt.Errorf("msgpack: a length of %d exceeds the %d bytes left", n, len(data)-pos)
			}
			switch c {
			case 0xdc, 0xdd:
				elems = int(n)
			case 0xde, 0xdf:
				elems = 2 * int(n)
			case 0xc7, 0xc8, 0xc9:
				skip = int(n) + 1 // ext: type byte + data
			default:
				skip = int(n)
			}
		}
		if skip > len(data)-pos {
			return errShort
		}
		pos += skip
		if elems > 0 {
			if len(stack) >= maxDepth {
				return fmt.Errorf("msgpack: nested deeper than %d", maxDepth)
			}
			if elems > len(data)-pos {
				return fmt.Errorf("msgpack: %d elements claimed, %d bytes left", elems, len(data)-pos)
			}
			stack = append(stack, elems)
		}
	}
	if pos != len(data) {
		return errors.New("trailing bytes after the body")
	}
	return nil
}
