package toolkit_test

import (
	"fmt"
	"testing"

	"github.com/toolbus/toolbus/toolkit"
)

// BenchmarkAccumulateHostile folds sequences a tool can write on purpose
// or by mistake; ns/op per block should stay flat as n grows (no O(n²)):
//
//	go test -run '^$' -bench BenchmarkAccumulateHostile -benchmem ./toolkit
func BenchmarkAccumulateHostile(b *testing.B) {
	for _, n := range []int{1_000, 8_000} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("blk-%d", i)
		}
		b.Run(fmt.Sprintf("unique-ids/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var a toolkit.Accumulator
				for i := range n {
					c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: ids[i], Data: "AAAA"}}}
					_ = a.Add(&c)
				}
			}
		})
		b.Run(fmt.Sprintf("invalid-base64-tail/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var a toolkit.Accumulator
				c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "d", Data: "A"}}}
				_ = a.Add(&c)
				for range n {
					c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "d", Data: "AAAA"}}}
					_ = a.Add(&c)
				}
			}
		})
		b.Run(fmt.Sprintf("type-clash-renames/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var a toolkit.Accumulator
				c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, ID: "x", Text: "t"}}}
				_ = a.Add(&c)
				for range n {
					c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockData, ID: "x", Data: "AAAA"}}}
					_ = a.Add(&c)
				}
			}
		})
	}
}
