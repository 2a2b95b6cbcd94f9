package pyrepr

import "testing"

// The cases are Python 3.12's repr of each str.
func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `''`},
		{"a b", `'a b'`},
		{"it's", `"it's"`},
		{`say "hi"`, `'say "hi"'`},
		{`it's "x"`, `'it\'s "x"'`},
		{"a\\b", `'a\\b'`},
		{"\n\r\t", `'\n\r\t'`},
		{"\x00\x1b\x7f", `'\x00\x1b\x7f'`},
		{"\u00a0\u00e9", `'\xa0é'`},
		{"\u200b\u2028\u3000", `'\u200b\u2028\u3000'`},
		{"\U0001F600\U000F0000", "'\U0001F600\\U000f0000'"},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
