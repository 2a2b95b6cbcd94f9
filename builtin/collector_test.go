package builtin

import "testing"

// TestCollectorJoinsSplitCharacter: a character whose bytes arrive in two
// reads, the line ending in the second, is kept whole. Held back as an
// incomplete tail (at a read's end, or by the flush of a line that waited), its
// bytes were then checked apart from the rest of the line and each
// became U+FFFD.
func TestCollectorJoinsSplitCharacter(t *testing.T) {
	for _, flush := range []bool{false, true} {
		c := newCollector(1 << 20)
		c.add([]byte("caf\xc3"))
		got := ""
		if flush {
			got += c.take(true, false) // the line waited 200ms
		}
		c.add([]byte("\xa9\n"))
		got += c.take(true, true)
		if got != "café\n" {
			t.Errorf("flush %v: got %q, want %q", flush, got, "café\n")
		}
	}
}
