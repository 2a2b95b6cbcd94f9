package callspan

import (
	"testing"
	"unicode/utf8"
)

// TestText: what a caller chose goes on a span as UTF-8 of at most n
// bytes, text that is UTF-8 already and within n unchanged.
func TestText(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{
		{"echo", 10, "echo"},
		{"é-long", 2, "é"},
		{"é-long", 1, ""},
		{"a\xff\xfeb", 10, "a\uFFFDb"},
		{"\xff\xff\xff\xff", 4, "\uFFFD"},
		{"ab\xffcdef", 4, "ab"},
		{"a\xffc\xfe", 5, "a\uFFFDc"},
	} {
		got := Text(tt.in, tt.n)
		if got != tt.want || len(got) > tt.n || !utf8.ValidString(got) {
			t.Errorf("Text(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}
