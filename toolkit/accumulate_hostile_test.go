package toolkit_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// hostileModel is a naive model of the accumulation rules that keeps data
// as the base64 text AgentScope keeps: a new block's valid data is held
// in canonical form; merging two valid texts concatenates their bytes,
// anything else concatenates the texts.
type hostileBlock struct {
	typ  toolkit.BlockType
	id   string
	text string // text, or data's base64 text
}

func hostileModel(chunks []toolkit.Chunk) []hostileBlock {
	canon := func(s string) string {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return base64.StdEncoding.EncodeToString(b)
		}
		return s
	}
	var out []hostileBlock
	renamed := 0
	taken := func(id string) bool {
		for _, o := range out {
			if o.id == id {
				return true
			}
		}
		return false
	}
	for _, c := range chunks {
	blocks:
		for _, b := range c.Content {
			v := b.Text
			if b.Type == toolkit.BlockData {
				v = canon(b.Data)
			}
			if b.ID != "" {
				for i := range out {
					if out[i].id != b.ID {
						continue
					}
					switch {
					case out[i].typ != b.Type:
						id := ""
						for id == "" || taken(id) {
							renamed++
							id = fmt.Sprintf("%s-%d", b.ID, renamed)
						}
						out = append(out, hostileBlock{b.Type, id, v})
					case b.Type == toolkit.BlockText:
						out[i].text += b.Text
					default:
						old, err1 := base64.StdEncoding.DecodeString(out[i].text)
						inc, err2 := base64.StdEncoding.DecodeString(b.Data)
						if err1 == nil && err2 == nil {
							out[i].text = base64.StdEncoding.EncodeToString(append(old, inc...))
						} else {
							out[i].text += b.Data
						}
					}
					continue blocks
				}
			}
			out = append(out, hostileBlock{b.Type, b.ID, v})
		}
		var merged []hostileBlock
		for _, b := range out {
			if n := len(merged); n > 0 && b.typ == toolkit.BlockText && merged[n-1].typ == toolkit.BlockText {
				merged[n-1].text += b.text
				continue
			}
			merged = append(merged, b)
		}
		out = merged
	}
	return out
}

// TestAccumulatorHostileMatchesModel folds long random sequences a tool
// could write to hurt: data with and without ids, text and data under one
// id (renames, and ids that look like renames), data that is not base64
// or becomes base64 again as pieces arrive, dozens of blocks; and compares
// with the naive model.
func TestAccumulatorHostileMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := []string{"", "", "", "a", "b", "a-1", "a-2", "b-3", "c", "d", "e", "f", "g", "h"}
	pieces := []string{"", "A", "AA", "AAA", "AAAA", "QQ==", "QUI=", "=", "==", "\n", "\r\n", "!", "A=A=", "QQ", "QUJD", "/+/+"}
	for round := range 3000 {
		var chunks []toolkit.Chunk
		for range rng.IntN(40) {
			var c toolkit.Chunk
			for range rng.IntN(5) {
				id := ids[rng.IntN(len(ids))]
				if rng.IntN(6) == 0 {
					id = fmt.Sprintf("u%d", rng.IntN(30))
				}
				if rng.IntN(2) == 0 {
					c.Content = append(c.Content, dataBlock(id, "a/b", pieces[rng.IntN(len(pieces))]))
				} else {
					c.Content = append(c.Content, textBlock(id, string(rune('a'+rng.IntN(26)))))
				}
			}
			chunks = append(chunks, c)
		}
		var acc toolkit.Accumulator
		for i := range chunks {
			_ = acc.Add(&chunks[i])
			if rng.IntN(5) == 0 {
				acc.Response("mid") // taking a response must change nothing
			}
		}
		got := acc.Response("x").Content
		want := hostileModel(chunks)
		same := len(got) == len(want)
		for i := 0; same && i < len(got); i++ {
			v := got[i].Text
			if got[i].Type == toolkit.BlockData {
				v = got[i].Data
			}
			same = got[i].Type == want[i].typ && got[i].ID == want[i].id && v == want[i].text
		}
		if !same {
			t.Fatalf("round %d: chunks %+v\naccumulated %+v\nmodel %+v", round, chunks, got, want)
		}
	}
}

// TestAccumulatorInvalidBase64MemoryLinear: data that is not base64 and
// grows by valid pieces is kept as text; AgentScope tries to decode the
// whole text on every merge, and doing it by decoding allocated the whole
// text again per piece (quadratic garbage: 237 MB for 32 KB). What the
// accumulator allocates stays within a small multiple of its input.
func TestAccumulatorInvalidBase64MemoryLinear(t *testing.T) {
	const n = 8000
	chunks := make([]toolkit.Chunk, n+1)
	chunks[0] = chunkOf(dataBlock("d", "a/b", "A"))
	for i := 1; i <= n; i++ {
		chunks[i] = chunkOf(dataBlock("d", "a/b", "AAAA"))
	}
	var acc toolkit.Accumulator
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range chunks {
		_ = acc.Add(&chunks[i])
	}
	runtime.ReadMemStats(&after)
	input := uint64(1 + 4*n)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64*input {
		t.Errorf("accumulating %d bytes of data allocated %d bytes, want at most %d", input, got, 64*input)
	}
	if got := acc.Response("x").Content[0].Data; got != "A"+strings.Repeat("AAAA", n) {
		t.Errorf("data = %.40q… (%d bytes), want the pieces concatenated", got, len(got))
	}
}
