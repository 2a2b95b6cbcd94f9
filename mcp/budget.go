package mcp

import (
	"sync"
)

// DefaultMaxToolBytes is Options.MaxToolBytes when it is zero: half the
// NATS server's default max_payload (1 MiB). The other half is left to
// the rest of the worker's announcement: its own tools, its groups, its
// skills (up to 256 KiB) and the other parts.
const DefaultMaxToolBytes = 512 << 10

// toolBudget is the room in their worker's announcement that the tools
// of the servers registering in one toolkit share (Options.MaxToolBytes):
// one for the servers of a Mount, one of its own for a Client made with
// NewClient. Each server holds the bytes of the tools it registered until
// its next registration or its Close; a server's registration takes room
// only from what the others leave, so a server that grows never pushes
// out another's tools. A server that had tools left out for want of room
// lists them again when another frees some.
type toolBudget struct {
	mu    sync.Mutex // held across a server's registration (sync), inside its regMu
	limit int
	held  map[*Client]int
	short map[*Client]bool // servers with tools left out for want of room
}

func newToolBudget(limit int) *toolBudget {
	if limit == 0 {
		limit = DefaultMaxToolBytes
	}
	return &toolBudget{limit: max(limit, 0), held: map[*Client]int{}, short: map[*Client]bool{}}
}

// others returns the bytes the servers other than c hold; b.mu is held.
func (b *toolBudget) others(c *Client) int {
	n := 0
	for o, h := range b.held {
		if o != c {
			n += h
		}
	}
	return n
}

// set records the bytes c's registered tools take and whether some were
// left out for want of room; b.mu is held. It returns the servers to
// list again: those short of room when c freed some.
func (b *toolBudget) set(c *Client, bytes int, short bool) []*Client {
	freed := bytes < b.held[c]
	if bytes > 0 {
		b.held[c] = bytes
	} else {
		delete(b.held, c)
	}
	if short {
		b.short[c] = true
	} else {
		delete(b.short, c)
	}
	if !freed {
		return nil
	}
	var again []*Client
	for o := range b.short {
		if o != c {
			again = append(again, o)
		}
	}
	return again
}

// release gives back what a closed client held.
func (b *toolBudget) release(c *Client) {
	b.mu.Lock()
	again := b.set(c, 0, false)
	b.mu.Unlock()
	for _, o := range again {
		o.relist()
	}
}
