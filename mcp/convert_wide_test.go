package mcp

import (
	"runtime"
	"testing"
	"unsafe"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolbus/toolbus/toolkit"
)

// A result of many content blocks (one 16 MiB message holds some 600,000
// empty text blocks) had its chunk's blocks appended one by one, the
// slice grown again and again: about six times the final blocks' size
// allocated, on top of what the go-sdk took to decode them. The blocks
// are allocated once.
func TestWideResultAllocatesItsBlocksOnce(t *testing.T) {
	const n = 600_000
	res := &sdk.CallToolResult{Content: make([]sdk.Content, n)}
	text := &sdk.TextContent{}
	for i := range res.Content {
		res.Content[i] = text
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := resultChunk(res)
	runtime.ReadMemStats(&after)
	blocks := uint64(n) * uint64(unsafe.Sizeof(toolkit.Block{}))
	if len(c.Content) != n {
		t.Fatalf("%d blocks, want %d", len(c.Content), n)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 2*blocks {
		t.Errorf("converting %d blocks allocated %d MiB, over twice their %d MiB", n, got>>20, blocks>>20)
	}
}
