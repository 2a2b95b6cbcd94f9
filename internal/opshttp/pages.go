package opshttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
)

// maxHeld is how many bytes of /metrics pages the endpoint holds at
// once, gathered and not yet taken by their clients, maxHeldBySource
// how many of them one source holds, and pageBlock the unit they are
// held in. A worker's 20,000 tool labels make a page of some 30 MB
// (a few MB compressed, as Prometheus asks for it).
const (
	maxHeld         = 128 << 20
	maxHeldBySource = 64 << 20
	pageBlock       = 64 << 10
)

// heldPages gathers h's answer (a scrape's page) in memory, its bytes
// taken from maxHeld and maxHeldBySource before they are allocated, then
// writes it, giving each block back as its client takes it. Gathered
// whole first, a page holds a turn (takeTurns) for as long as it takes to
// gather, not to read; each page its client reads slowly, or not at all,
// is held until the write timeout: without a bound, a neighbour's scrapes
// that it does not read held a page each (16 of a 16 MiB page: 512 MiB).
// A page past the bound is answered 503 at once. The request's context
// ends after scrapeTimeout, which bounds the wait for a turn.
func heldPages(h http.Handler) http.Handler {
	held := &heldBytes{bySource: map[netip.Prefix]int{}}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), scrapeTimeout)
		defer cancel()
		p := &page{held: held, src: sourceOf(r), header: http.Header{}}
		defer p.free()
		h.ServeHTTP(p, r.WithContext(ctx))
		if p.over {
			http.Error(rw, fmt.Sprintf("the metrics pages held for their clients are at their bound (%d MiB, %d MiB for one address); try again later, or ask for a compressed page (Accept-Encoding: gzip)", maxHeld>>20, maxHeldBySource>>20), http.StatusServiceUnavailable)
			return
		}
		for k, v := range p.header {
			rw.Header()[k] = v
		}
		rw.Header().Set("Content-Length", strconv.Itoa(p.size))
		p.WriteHeader(http.StatusOK) // if h wrote nothing
		rw.WriteHeader(p.code)
		for len(p.blocks) > 0 {
			b := p.blocks[0]
			p.blocks[0] = nil // let go as it is given back: the rest of the slice holds the array
			p.blocks = p.blocks[1:]
			_, err := rw.Write(b)
			held.give(p.src, pageBlock)
			if err != nil {
				return
			}
		}
	})
}

// heldBytes counts the bytes of the pages held, in all and by source.
type heldBytes struct {
	mu       sync.Mutex
	all      int
	bySource map[netip.Prefix]int
}

// take takes n bytes for src, if the bounds leave them.
func (h *heldBytes) take(src netip.Prefix, n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.all+n > maxHeld || h.bySource[src]+n > maxHeldBySource {
		return false
	}
	h.all += n
	h.bySource[src] += n
	return true
}

// give gives back n bytes of src.
func (h *heldBytes) give(src netip.Prefix, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.all -= n
	if h.bySource[src] -= n; h.bySource[src] <= 0 {
		delete(h.bySource, src)
	}
}

// errPageHeld is a page's write past the bounds of the pages held.
var errPageHeld = errors.New("opshttp: the metrics pages held are at their bound")

// page is an answer gathered in memory, in blocks of pageBlock bytes,
// each taken from held before it is allocated.
type page struct {
	held   *heldBytes
	src    netip.Prefix
	header http.Header
	code   int
	blocks [][]byte
	size   int
	over   bool // a block was refused: the page is not whole
}

func (p *page) Header() http.Header { return p.header }

func (p *page) WriteHeader(code int) {
	if p.code == 0 {
		p.code = code
	}
}

func (p *page) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	n := 0
	for len(b) > 0 {
		if len(p.blocks) == 0 || len(p.blocks[len(p.blocks)-1]) == pageBlock {
			if p.over || !p.held.take(p.src, pageBlock) {
				p.over = true
				return n, errPageHeld
			}
			p.blocks = append(p.blocks, make([]byte, 0, pageBlock))
		}
		last := &p.blocks[len(p.blocks)-1]
		k := min(len(b), pageBlock-len(*last))
		*last = append(*last, b[:k]...)
		b, n, p.size = b[k:], n+k, p.size+k
	}
	return n, nil
}

// free gives back the blocks not written.
func (p *page) free() {
	p.held.give(p.src, len(p.blocks)*pageBlock)
	p.blocks = nil
}
