package middleware

import (
	"container/list"
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/toolbus/toolbus/toolkit"
)

// keptBytes is a floor of what the cache's entries take in memory: their
// keys, their chunks' content and metadata (as toolkit.Options.
// MaxResultBytes counts them), and for each entry its list element and
// cacheEntry, for each chunk its struct.
func keptBytes(c *cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.ll.Front(); el != nil; el = el.Next() {
		e := el.Value.(*cacheEntry)
		n += len(e.key) + int(unsafe.Sizeof(list.Element{})+unsafe.Sizeof(cacheEntry{}))
		for _, ch := range e.chunks {
			n += ch.Size() + ch.MetaSize() + int(unsafe.Sizeof(ch))
		}
	}
	return n
}

// A flood of distinct large inputs with tiny answers: the cache counted
// only the answers, so the inputs' JSON, its keys, grew it to a hundred
// times MaxBytes (within MaxEntries). Keys count now, and so does what
// each entry takes besides.
func TestCacheCountsItsKeys(t *testing.T) {
	c := newCache(Cache{MaxBytes: 1 << 20})
	tk := toolkit.New(nil)
	tk.Use(c.middleware)
	var runs int
	bigTool(t, tk, 1, &runs)
	for i := range 1000 {
		invokeBig(t, tk, strings.Repeat(string(rune('a'+i%26)), 100<<10)+strings.Repeat("z", i))
	}
	if kept := keptBytes(c); kept > 1<<20 {
		t.Errorf("the cache keeps at least %d bytes in %d entries, bound %d", kept, c.len(), 1<<20)
	}
}

// Entries of nothing but overhead: with MaxEntries far above what MaxBytes
// holds, each entry's list element, struct and chunk struct count.
func TestCacheCountsEntryOverhead(t *testing.T) {
	c := newCache(Cache{MaxBytes: 64 << 10, MaxEntries: 1 << 20})
	for i := range 10_000 {
		key, chunks := strings.Repeat("k", 8)+string(rune(0x4e00+i)), []toolkit.Chunk{{}}
		c.put(key, chunks, entrySize(key, chunks))
	}
	if kept := keptBytes(c); kept > 64<<10 {
		t.Errorf("the cache keeps at least %d bytes in %d entries, bound %d", kept, c.len(), 64<<10)
	}
}

// Misses in flight each recorded up to MaxBytes of copies, so many
// together held many times the bound. They share MaxBytes now: while
// one miss holds most of it, another's answer is not recorded, so not
// cached.
func TestCacheBoundsMissesInFlight(t *testing.T) {
	c := newCache(Cache{MaxBytes: 1 << 20})
	tk := toolkit.New(nil)
	tk.Use(c.middleware)
	schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	wrote, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	runs := map[string]int{}
	err := tk.Add(toolkit.Raw("big", "B.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		q := call.Input["q"].(string)
		mu.Lock()
		runs[q]++
		mu.Unlock()
		if err := w.Write(toolkit.Text(strings.Repeat("x", 700<<10))); err != nil {
			return err
		}
		if q == "held" {
			close(wrote)
			<-release
		}
		return nil
	}), toolkit.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk.Invoke(context.Background(), toolkit.ToolCall{ID: "h", Name: "big", Input: map[string]any{"q": "held"}})
	}()
	select {
	case <-wrote:
	case <-time.After(30 * time.Second):
		t.Fatal("the held miss never wrote")
	}
	invokeBig(t, tk, "other")
	invokeBig(t, tk, "other")
	close(release)
	<-done
	mu.Lock()
	defer mu.Unlock()
	if runs["other"] != 2 {
		t.Errorf("the tool ran %d times for other: its 700 KiB were recorded while the held miss's 700 KiB were, past MaxBytes (1 MiB) in flight", runs["other"])
	}
	if rec := c.recording.Load(); rec != 0 {
		t.Errorf("%d bytes still reserved by misses in flight after all ended", rec)
	}
}
