package middleware

import (
	"container/list"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/toolbus/toolbus/toolkit"
)

// DefaultCacheEntries is the size of a Cache whose MaxEntries is zero.
const DefaultCacheEntries = 1024

// DefaultCacheBytes is the bound of a Cache whose MaxBytes is zero: the
// toolkit's default MaxResultBytes, so one answer of any size the
// toolkit lets through by default can be kept.
const DefaultCacheBytes = 64 << 20

// Cache answers repeated calls of read-only tools from memory. Other
// tools pass through untouched: only a tool that changes nothing
// (toolkit.ReadOnly) can be answered without running it. The skill
// viewer (toolkit.KindSkill) passes through too: read-only, but what it
// answers depends on the session's active groups, which the key does
// not hold (a skill of a group the session has not activated is not
// found). A call whose context has ended is not answered from the
// cache: it ends interrupted (or timeout), as it does without one.
//
// The key is the tool name plus the canonical JSON of the input (object
// keys sorted, numbers as JSON numbers), the tool's presets (by
// toolkit.Tool.PresetsID: a tool registered again with other presets is
// not answered from the entries of the one before), and the session
// too when PerSession is set. Only a successful call is stored: one whose
// handler returned nil, whose chunks carried no error, interrupted or
// denied state and were all taken (none refused, as past the call's
// toolkit.Options.MaxResultBytes: the call failed, and what the tool
// writes on is not kept), and whose context was still live. A hit replays
// the stored chunks, in order, and does not run the tool; progress
// reports are not stored. Concurrent misses of the same key all run the
// tool. The zero value caches up to DefaultCacheEntries entries holding
// up to DefaultCacheBytes in all, with no expiry.
//
// An entry's bytes are its chunks' content and metadata as
// toolkit.Options.MaxResultBytes counts them (Chunk.Size and
// Chunk.MetaSize), which is about what the copies it holds take. Storing
// one evicts the least recently used entries until both bounds hold. An
// answer larger than MaxBytes is not stored at all (it would evict every
// other entry and still not fit): its recording stops, and is dropped,
// as soon as it passes the bound, and what was cached stays.
type Cache struct {
	// TTL is how long an entry stays fresh; zero means until evicted.
	TTL time.Duration
	// MaxEntries bounds the cache (least recently used out first); zero
	// means DefaultCacheEntries.
	MaxEntries int
	// MaxBytes bounds the bytes the entries hold in all (least recently
	// used out first); zero means DefaultCacheBytes. An answer larger
	// than MaxBytes is not cached.
	MaxBytes int
	// PerSession keys entries by session too (of the caller's identity:
	// ToolCall.Scope), for read-only tools whose output depends on who
	// asks.
	PerSession bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

type cacheEntry struct {
	key     string
	chunks  []toolkit.Chunk
	size    int       // bytes of chunks (cacheRecord.add)
	expires time.Time // zero: never
}

type cache struct {
	cfg   Cache
	mu    sync.Mutex
	ll    *list.List // front = most recently used; values are *cacheEntry
	items map[string]*list.Element
	bytes int // sum of the entries' size
}

// cacheRecord is what a miss records of its answer: copies of the
// chunks and their bytes, or over once they passed max (then nothing
// more is kept, and nothing is stored).
type cacheRecord struct {
	chunks []toolkit.Chunk
	size   int
	max    int
	over   bool
}

func (r *cacheRecord) add(ch toolkit.Chunk) {
	if r.over {
		return
	}
	r.size += ch.Size() + ch.MetaSize()
	if r.size > r.max {
		r.over, r.chunks = true, nil
		return
	}
	r.chunks = append(r.chunks, copyChunk(ch))
}

// Middleware returns the middleware with its own, empty cache.
func (c Cache) Middleware() toolkit.Middleware { return newCache(c).middleware }

func newCache(c Cache) *cache {
	if c.MaxEntries <= 0 {
		c.MaxEntries = DefaultCacheEntries
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultCacheBytes
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return &cache{cfg: c, ll: list.New(), items: map[string]*list.Element{}}
}

func (c *cache) middleware(next toolkit.Handler) toolkit.Handler {
	return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		if call.Tool == nil || !call.Tool.ReadOnly() || call.Tool.Kind() == toolkit.KindSkill || ctx.Err() != nil {
			return next(ctx, call, w)
		}
		key, ok := c.key(call)
		if !ok { // an input that is not JSON cannot be keyed
			return next(ctx, call, w)
		}
		if chunks, ok := c.get(key); ok {
			for _, ch := range chunks {
				if err := w.Write(copyChunk(ch)); err != nil {
					return err
				}
			}
			return nil
		}
		rec := cacheRecord{max: c.cfg.MaxBytes}
		obs := &observer{w: w}
		obs.onChunk = func(ch toolkit.Chunk) {
			if obs.err == nil { // after a refusal nothing is stored
				rec.add(ch)
			}
		}
		err := next(ctx, call, obs)
		if err == nil && obs.err == nil && ctx.Err() == nil && obs.state == "" && !rec.over {
			c.put(key, rec.chunks, rec.size)
		}
		return err
	}
}

func (c *cache) key(call *toolkit.Call) (string, bool) {
	in, err := json.Marshal(call.Input) // encoding/json sorts map keys
	if err != nil {
		return "", false
	}
	k := call.Name + "\x00" + string(in)
	if id := call.Tool.PresetsID(); id != 0 { // the presets' values are hidden from middleware
		k = strconv.FormatUint(id, 10) + "\x00" + k
	}
	if c.cfg.PerSession { // the caller's session: another identity's of that name is another
		k = call.Scope() + "\x00" + k
	}
	return k, true
}

func (c *cache) get(key string) ([]toolkit.Chunk, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*cacheEntry)
	if !e.expires.IsZero() && !c.cfg.Now().Before(e.expires) {
		c.remove(el)
		return nil, false
	}
	c.ll.MoveToFront(el)
	return e.chunks, true
}

// put stores chunks of size bytes (at most MaxBytes) under key, and
// evicts the least recently used entries past MaxEntries or MaxBytes.
func (c *cache) put(key string, chunks []toolkit.Chunk, size int) {
	e := &cacheEntry{key: key, chunks: chunks, size: size}
	if c.cfg.TTL > 0 {
		e.expires = c.cfg.Now().Add(c.cfg.TTL)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.bytes -= el.Value.(*cacheEntry).size
		el.Value = e
		c.ll.MoveToFront(el)
	} else {
		c.items[key] = c.ll.PushFront(e)
	}
	c.bytes += size
	// the new entry is at the front and fits MaxBytes alone: the loop
	// stops before it
	for c.ll.Len() > c.cfg.MaxEntries || c.bytes > c.cfg.MaxBytes {
		c.remove(c.ll.Back())
	}
}

// remove drops an entry; c.mu is held.
func (c *cache) remove(el *list.Element) {
	e := c.ll.Remove(el).(*cacheEntry)
	delete(c.items, e.key)
	c.bytes -= e.size
}

func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}

// copyChunk copies a chunk's content and metadata (one level deep), so
// neither the tool's later changes nor a consumer's reach the cache.
func copyChunk(ch toolkit.Chunk) toolkit.Chunk {
	ch.Content = slices.Clone(ch.Content)
	ch.Metadata = maps.Clone(ch.Metadata)
	return ch
}
