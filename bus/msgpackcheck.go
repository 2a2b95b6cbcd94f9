package bus

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// maxDepth bounds the nesting of arrays and maps in a msgpack body.
const maxDepth = 64

// checkMsgpack walks one msgpack value without building it and rejects
// what would make the decoder allocate far more than the body holds: a
// container claiming more elements than bytes remain, a string longer than
// the body, nesting deeper than maxDepth. The decoder preallocates from
// the claimed lengths, so without this a small hostile body could demand
// gigabytes.
func checkMsgpack(data []byte) error {
	pos := 0
	stack := []int{1} // values still expected at each open level
	for len(stack) > 0 {
		if stack[len(stack)-1] == 0 {
			stack = stack[:len(stack)-1]
			continue
		}
		stack[len(stack)-1]--
		if pos >= len(data) {
			return errors.New("msgpack: unexpected end of body")
		}
		c := data[pos]
		pos++
		rest := len(data) - pos
		length := func(size int) (int, error) {
			if rest < size {
				return 0, errors.New("msgpack: unexpected end of body")
			}
			var n uint64
			switch size {
			case 1:
				n = uint64(data[pos])
			case 2:
				n = uint64(binary.BigEndian.Uint16(data[pos:]))
			case 4:
				n = uint64(binary.BigEndian.Uint32(data[pos:]))
			}
			pos += size
			if n > uint64(len(data)-pos) {
				return 0, fmt.Errorf("msgpack: a length of %d exceeds the %d bytes left", n, len(data)-pos)
			}
			return int(n), nil
		}
		skip := func(n int) error {
			if n > len(data)-pos {
				return errors.New("msgpack: unexpected end of body")
			}
			pos += n
			return nil
		}
		open := func(n int) error {
			if len(stack) >= maxDepth {
				return fmt.Errorf("msgpack: nested deeper than %d", maxDepth)
			}
			if n > len(data)-pos {
				return fmt.Errorf("msgpack: %d elements claimed, %d bytes left", n, len(data)-pos)
			}
			stack = append(stack, n)
			return nil
		}
		var err error
		var n int
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			err = open(2 * int(c&0x0f))
		case c >= 0x90 && c <= 0x9f:
			err = open(int(c & 0x0f))
		case c >= 0xa0 && c <= 0xbf:
			err = skip(int(c & 0x1f))
		case c == 0xc4 || c == 0xd9:
			if n, err = length(1); err == nil {
				err = skip(n)
			}
		case c == 0xc5 || c == 0xda:
			if n, err = length(2); err == nil {
				err = skip(n)
			}
		case c == 0xc6 || c == 0xdb:
			if n, err = length(4); err == nil {
				err = skip(n)
			}
		case c == 0xc7, c == 0xc8, c == 0xc9:
			if n, err = length(map[byte]int{0xc7: 1, 0xc8: 2, 0xc9: 4}[c]); err == nil {
				err = skip(n + 1)
			}
		case c == 0xca, c == 0xce, c == 0xd2:
			err = skip(4)
		case c == 0xcb, c == 0xcf, c == 0xd3:
			err = skip(8)
		case c == 0xcc, c == 0xd0:
			err = skip(1)
		case c == 0xcd, c == 0xd1:
			err = skip(2)
		case c >= 0xd4 && c <= 0xd8:
			err = skip(1 + 1<<(c-0xd4))
		case c == 0xdc, c == 0xde, c == 0xdd, c == 0xdf:
			size := 2
			if c == 0xdd || c == 0xdf {
				size = 4
			}
			if n, err = length(size); err == nil {
				if c == 0xde || c == 0xdf {
					n *= 2
				}
				err = open(n)
			}
		default: // 0xc1 is never used
			err = fmt.Errorf("msgpack: invalid code 0x%02x", c)
		}
		if err != nil {
			return err
		}
	}
	if pos != len(data) {
		return errors.New("trailing bytes after the body")
	}
	return nil
}
