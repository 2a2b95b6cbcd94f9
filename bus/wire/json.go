package wire

import "fmt"

// checkJSON walks a JSON body without building it and refuses what the
// msgpack decoder refuses too: nesting deeper than MaxDepth, and a body
// that would decode to more than its Budget (with the same estimate of
// what encoding/json allocates: maps, slices, copied strings, boxed
// numbers). encoding/json itself allows 10,000 levels, and a small body of
// deep or many empty containers costs a goroutine a large stack or the
// heap many times the body; this runs first, in constant stack.
//
// It does not validate the JSON: encoding/json does that afterwards, with
// its own errors.
func checkJSON(data []byte) error {
	left := Budget(len(data))
	depth := 0
	// Per open container: whether it is an object (its elements are
	// entries), and whether it has an element yet.
	var stackBuf [MaxDepth + 1]byte
	stack := stackBuf[:0]
	const (
		isObject = 1 << iota
		hasElem
	)
	elem := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		if *top&hasElem == 0 {
			*top |= hasElem
			if *top&isObject != 0 {
				left -= costMapEntry
			} else {
				left -= costElem
			}
		}
	}
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '{', '[':
			elem()
			if depth++; depth > MaxDepth {
				return fmt.Errorf("json: nested deeper than %d", MaxDepth)
			}
			if c == '{' {
				left -= costMap
				stack = append(stack, isObject)
			} else {
				left -= costSlice
				stack = append(stack, 0)
			}
		case '}', ']':
			if depth > 0 {
				depth--
				stack = stack[:len(stack)-1]
			}
		case ',':
			if len(stack) > 0 {
				stack[len(stack)-1] &^= hasElem
			}
		case '"':
			elem()
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			left -= j - i
			i = j
		case ' ', '\t', '\n', '\r', ':':
		default: // a number, true, false or null
			elem()
			for i+1 < len(data) && !jsonDelimiter(data[i+1]) {
				i++
			}
			if c == '-' || c >= '0' && c <= '9' {
				left -= costNumber
			}
		}
		if left < 0 {
			return fmt.Errorf("json: the body of %d bytes would decode to more than %d bytes", len(data), Budget(len(data)))
		}
	}
	return nil
}

func jsonDelimiter(c byte) bool {
	switch c {
	case ',', ']', '}', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
		return true
	}
	return false
}
