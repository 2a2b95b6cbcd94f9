// Package pyrepr writes values as Python's repr shows them, for the
// texts that quote what a model or a caller sent in AgentScope's words.
package pyrepr

import (
	"fmt"
	"strings"
	"unicode"
)

// Quote is Python's repr of a str: in single quotes, or double ones when
// it holds a single quote and no double one, with the quote, the
// backslash, \n, \r and \t escaped, and what str.isprintable refuses
// (controls, formats, separators but the space, private use, unassigned)
// as \xNN, \uNNNN or \UNNNNNNNN.
func Quote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
