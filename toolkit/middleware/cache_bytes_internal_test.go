package middleware

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// heldBytes walks the cache's entries and adds up what they count: their
// keys, their chunks (content and metadata, as
// toolkit.Options.MaxResultBytes counts them) and overheads (entrySize).
func heldBytes(c *cache) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for el := c.ll.Front(); el != nil; el = el.Next() {
		e := el.Value.(*cacheEntry)
		n += entrySize(e.key, e.chunks)
	}
	return n
}

// bigTool is a read-only tool answering each input with size bytes of
// text in chunks of at most 64 KiB; it counts its runs.
func bigTool(t *testing.T, tk *toolkit.Toolkit, size int, runs *int) {
	t.Helper()
	schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	part := strings.Repeat("x", 64<<10)
	err := tk.Add(toolkit.Raw("big", "B.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		*runs++
		for left := size; left > 0; left -= len(part) {
			if err := w.Write(toolkit.Text(part[:min(left, len(part))])); err != nil {
				return err
			}
		}
		return nil
	}), toolkit.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
}

func invokeBig(t *testing.T, tk *toolkit.Toolkit, q string) {
	t.Helper()
	if r := tk.Invoke(context.Background(), toolkit.ToolCall{ID: "b", Name: "big", Input: map[string]any{"q": q}}); r.State != toolkit.StateSuccess {
		t.Fatalf("%s: %s/%s %v", q, r.State, r.Code, r.Content)
	}
}

// A hundred distinct calls of a read-only tool answering 1 MiB each: the
// cache held all of them (100 MiB, under MaxEntries), nothing bounded
// its bytes. Now it holds at most DefaultCacheBytes, the oldest out
// first, and its count of bytes is what its entries hold.
func TestCacheBoundsItsBytes(t *testing.T) {
	c := newCache(Cache{})
	tk := toolkit.New(nil)
	tk.Use(c.middleware)
	var runs int
	bigTool(t, tk, 1<<20, &runs)
	for i := range 100 {
		invokeBig(t, tk, strings.Repeat("q", i+1))
	}
	held := heldBytes(c)
	if held > DefaultCacheBytes {
		t.Fatalf("the cache holds %d bytes in %d entries, bound %d", held, c.len(), DefaultCacheBytes)
	}
	if held < DefaultCacheBytes/2 {
		t.Errorf("the cache holds %d bytes in %d entries: it evicted far more than its bound %d asks", held, c.len(), DefaultCacheBytes)
	}
	if c.bytes != held {
		t.Errorf("the cache counts %d bytes, its entries hold %d", c.bytes, held)
	}
	runs = 0
	invokeBig(t, tk, strings.Repeat("q", 100)) // the newest is still there
	invokeBig(t, tk, "q")                      // the oldest is not
	if runs != 1 {
		t.Errorf("the tool ran %d times for the newest and the oldest input, want 1 (the oldest)", runs)
	}
}

// An answer larger than MaxBytes is not cached (storing it would evict
// everything else and still not fit), and does not evict what is there;
// replacing and expiring entries keep the count of bytes right.
func TestCacheSkipsAnAnswerPastMaxBytes(t *testing.T) {
	c := newCache(Cache{MaxBytes: 1 << 20})
	tk := toolkit.New(nil)
	tk.Use(c.middleware)
	var runs int
	size := 300 << 10
	schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	err := tk.Add(toolkit.Raw("big", "B.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		runs++
		n := size
		if call.Input["q"] == "huge" {
			n = 2 << 20
		}
		return w.Write(toolkit.Text(strings.Repeat("x", n)))
	}), toolkit.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	invokeBig(t, tk, "a")
	invokeBig(t, tk, "b")
	invokeBig(t, tk, "huge")
	invokeBig(t, tk, "huge")
	if runs != 4 {
		t.Errorf("the tool ran %d times, want 4: the answer past MaxBytes was cached", runs)
	}
	if n := c.len(); n != 2 {
		t.Errorf("%d entries, want 2: the answer past MaxBytes evicted others", n)
	}
	invokeBig(t, tk, "a")
	invokeBig(t, tk, "b")
	if runs != 4 {
		t.Errorf("the tool ran %d times, want 4: a and b were not kept", runs)
	}
}

// Replacing an entry and dropping an expired one keep the count of
// bytes what the entries hold.
func TestCacheCountsBytesOnReplaceAndExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newCache(Cache{MaxBytes: 1 << 20, TTL: time.Minute, Now: func() time.Time { return now }})
	text := func(n int) []toolkit.Chunk {
		return []toolkit.Chunk{toolkit.Text(strings.Repeat("y", n))}
	}
	check := func(step string) {
		t.Helper()
		if held := heldBytes(c); c.bytes != held || held > 1<<20 {
			t.Errorf("%s: the cache counts %d bytes, its entries hold %d (bound %d)", step, c.bytes, held, 1<<20)
		}
	}
	put := func(key string, n int) {
		chunks := text(n)
		c.put(key, chunks, entrySize(key, chunks))
	}
	put("a", 300<<10)
	put("b", 300<<10)
	check("two entries")
	put("a", 600<<10) // replaces a: 900 KiB in all
	check("a replaced")
	if n := c.len(); n != 2 {
		t.Errorf("%d entries after a was replaced, want 2", n)
	}
	put("c", 300<<10) // b, the least recently used, goes
	check("c added")
	if _, ok := c.get("b"); ok {
		t.Error("b is still there past MaxBytes")
	}
	now = now.Add(time.Minute)
	if _, ok := c.get("a"); ok {
		t.Error("a is still there past its TTL")
	}
	check("a expired")
}
