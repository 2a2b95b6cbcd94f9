package toolkit

import (
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// TestB64State: b64state, fed a text in random pieces, says it decodes
// exactly when base64.StdEncoding.DecodeString does: every text of up to
// six characters over an alphabet of the cases (letters, '=', newlines,
// a non-base64 byte), and long random ones.
func TestB64State(t *testing.T) {
	const alphabet = "A/+=\n\r!"
	rng := rand.New(rand.NewPCG(5, 6))
	check := func(text string) {
		var s b64state
		for rest := text; rest != ""; {
			n := 1 + rng.IntN(len(rest))
			s.feed(rest[:n])
			rest = rest[n:]
		}
		_, err := base64.StdEncoding.DecodeString(text)
		if s.valid() != (err == nil) {
			t.Fatalf("%q: b64state says valid=%v, DecodeString says %v", text, s.valid(), err)
		}
	}
	var all func(prefix string, n int)
	all = func(prefix string, n int) {
		check(prefix)
		if n == 0 {
			return
		}
		for i := range len(alphabet) {
			all(prefix+alphabet[i:i+1], n-1)
		}
	}
	all("", 6)
	for range 20000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			const chars = "AAAAAAAb/+==\n!"
			b[i] = chars[rng.IntN(len(chars))]
		}
		check(string(b))
	}
}
