package builtin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/toolbus/toolbus/internal/pyrepr"
)

// pyStr writes a JSON value as Python's str() prints what json.loads
// makes of it, which is how AgentScope's answers quote a model's
// arguments: a string as it is, anything else as its repr (['1', 2],
// {'a': True}, None). A number the JSON wrote without a fraction or an
// exponent is an int; others are floats, printed as Python does (1.5,
// 1e+16, 2.5e-07). raw is a value the input's decoder accepted, so
// bounded in size and depth.
func pyStr(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return string(raw)
	}
	if s, ok := tok.(string); ok {
		return s
	}
	var b strings.Builder
	if err := pyRepr(dec, tok, &b); err != nil {
		return string(raw)
	}
	return b.String()
}

func pyRepr(dec *json.Decoder, tok json.Token, b *strings.Builder) error {
	switch v := tok.(type) {
	case json.Delim:
		end := json.Delim(']')
		if v == '{' {
			end = '}'
		}
		b.WriteRune(rune(v))
		for i := 0; ; i++ {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			if tok == end {
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			if err := pyRepr(dec, tok, b); err != nil {
				return err
			}
			if v == '{' {
				b.WriteString(": ")
				if tok, err = dec.Token(); err != nil {
					return err
				}
				if err := pyRepr(dec, tok, b); err != nil {
					return err
				}
			}
		}
		b.WriteRune(rune(end))
	case string:
		b.WriteString(pyrepr.Quote(v))
	case json.Number:
		b.WriteString(pyNumber(v))
	case bool:
		if v {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case nil:
		b.WriteString("None")
	default:
		return fmt.Errorf("unexpected JSON token %T", tok)
	}
	return nil
}

// pyNumber is a JSON number as Python prints what json.loads makes of it.
func pyNumber(n json.Number) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return s // an int, of any size
	}
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && !math.IsInf(f, 0):
		return s
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	// repr(float): the shortest digits that read back as f, positional
	// for exponents from -4 to 15, else 1.5e+16 (two exponent digits at
	// least, as Go's 'e' writes them).
	e := strconv.FormatFloat(f, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	p := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(p, ".") {
		p += ".0"
	}
	return p
}
