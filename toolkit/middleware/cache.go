package middleware

import (
	"container/list"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolbus/toolbus/internal/valuewalk"
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
// too when PerSession is set. A call whose input would write about
// three times MaxBytes of JSON or more (an in-process caller's maps
// holding the same next map twice, forty levels down: a terabyte) or
// nest deeper than 10000 levels is not keyed: it runs, as a call of a
// tool not cached does. Only a successful call is stored: one whose
// handler returned nil, whose chunks carried no error, interrupted or
// denied state and were all taken (none refused, as past the call's
// toolkit.Options.MaxResultBytes: the call failed, and what the tool
// writes on is not kept), and whose context was still live. A hit replays
// the stored chunks, in order, and does not run the tool; progress
// reports are not stored. Concurrent misses of the same key all run the
// tool. The zero value caches up to DefaultCacheEntries entries holding
// up to DefaultCacheBytes in all, with no expiry.
//
// An entry's bytes are its key (the input's JSON, as large as the input
// is), its chunks' content and metadata as toolkit.Options.MaxResultBytes
// counts them (Chunk.Size and Chunk.MetaSize), and a fixed allowance for
// what Go keeps for the entry (256 bytes) and for each chunk (64): about
// what it takes in memory. Storing one evicts the least recently used
// entries until both bounds hold. An entry larger than MaxBytes is not
// stored at all (it would evict every other entry and still not fit):
// its recording stops, and is dropped, as soon as it passes the bound,
// and what was cached stays.
//
// The misses in flight share one more MaxBytes for the copies they
// record (so the cache holds at most twice MaxBytes, the entries and the
// recordings): a miss whose next chunk would take them past it stops
// recording and gives its bytes back, and its answer is not stored (it
// reaches its caller all the same).
type Cache struct {
	// TTL is how long an entry stays fresh; zero means until evicted.
	TTL time.Duration
	// MaxEntries bounds the cache (least recently used out first); zero
	// means DefaultCacheEntries.
	MaxEntries int
	// MaxBytes bounds the bytes the entries hold in all, keys included
	// (least recently used out first), and apart from them the bytes the
	// misses in flight record; zero means DefaultCacheBytes. An entry
	// larger than MaxBytes is not cached.
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
	size    int       // bytes the entry counts (entrySize)
	expires time.Time // zero: never
}

// entryHeld is about what an entry takes besides its key's bytes and its
// chunks: its cacheEntry, list element and map slot (with the map's room
// to grow). chunkHeld is about what a chunk takes besides its content
// and metadata: its struct in the entry's slice, with the slice's room to
// grow. Without them a flood of tiny entries would count next to nothing.
const (
	entryHeld = 256
	chunkHeld = 64
)

// chunkBytes is what a cached chunk counts: its content and metadata as
// toolkit.Options.MaxResultBytes counts them (Chunk.Size and MetaSize),
// and chunkHeld.
func chunkBytes(ch *toolkit.Chunk) int { return ch.Size() + ch.MetaSize() + chunkHeld }

// entrySize is what an entry of key and chunks counts against MaxBytes:
// its key (the input's JSON, as large as the input), its chunks and
// entryHeld.
func entrySize(key string, chunks []toolkit.Chunk) int {
	n := len(key) + entryHeld
	for i := range chunks {
		n += chunkBytes(&chunks[i])
	}
	return n
}

type cache struct {
	cfg   Cache
	mu    sync.Mutex
	ll    *list.List // front = most recently used; values are *cacheEntry
	items map[string]*list.Element
	bytes int // sum of the entries' size
	// recording is the bytes the misses in flight hold (cacheRecord),
	// at most MaxBytes in all.
	recording atomic.Int64
}

// cacheRecord is what a miss records of its answer: copies of the
// chunks, and the bytes they and the key count (entrySize), reserved of
// the cache's recording; or over once they passed MaxBytes, or would
// have taken the misses in flight past it (then nothing more is kept,
// the reservation is given back, and nothing is stored).
type cacheRecord struct {
	c      *cache
	chunks []toolkit.Chunk
	size   int
	over   bool
}

func (c *cache) record(key string) *cacheRecord {
	r := &cacheRecord{c: c}
	r.reserve(len(key) + entryHeld)
	return r
}

// reserve takes n bytes more of the cache's recording, or gives the
// record up when they do not fit.
func (r *cacheRecord) reserve(n int) bool {
	if r.over {
		return false
	}
	fits := r.size+n <= r.c.cfg.MaxBytes
	if fits && r.c.recording.Add(int64(n)) > int64(r.c.cfg.MaxBytes) {
		r.c.recording.Add(-int64(n)) // the other misses in flight hold the rest
		fits = false
	}
	if !fits {
		r.release()
		r.over, r.chunks = true, nil
		return false
	}
	r.size += n
	return true
}

func (r *cacheRecord) add(ch toolkit.Chunk) {
	if r.reserve(chunkBytes(&ch)) {
		r.chunks = append(r.chunks, copyChunk(ch))
	}
}

// release gives the record's reservation back.
func (r *cacheRecord) release() {
	r.c.recording.Add(-int64(r.size))
	r.size = 0
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
		if !ok { // an input that is not JSON, or too large for any entry, cannot be keyed
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
		rec := c.record(key)
		defer rec.release()
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

// maxKeyDepth bounds how deep an input a key is written of, as the
// toolkit's inputs are (encoding/json's decoder stops there too).
const maxKeyDepth = 10000

func (c *cache) key(call *toolkit.Call) (string, bool) {
	// An in-process caller's input may hold a map twice: written whole,
	// forty levels of maps holding the same next map twice are a
	// terabyte, which no entry could hold anyway.
	if valuewalk.JSON.Walk(call.Input, 4*maxKeyDepth, 3*c.cfg.MaxBytes) != nil {
		return "", false
	}
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

// put stores chunks under key, counting size (entrySize, at most
// MaxBytes), and
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
