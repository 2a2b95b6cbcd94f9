package skill

import (
	"sync"
	"time"
)

// latest is a value read by a function that may not return for long (a
// skills directory on a mount that stopped answering): get runs one read
// at a time and waits for it at most a while, and past that returns what
// the last finished read gave, while the read goes on. Its zero value is
// ready for use.
type latest[T any] struct {
	mu    sync.Mutex
	last  T
	going *latestRead[T] // a read under way; nil when none
}

type latestRead[T any] struct {
	done   chan struct{}
	v      T
	warned bool // its lateness was reported
}

// get returns read's value when a read (this one, or one under way)
// finishes within wait, and otherwise the last value read, calling late
// once for the read that is late.
func (l *latest[T]) get(read func() T, wait time.Duration, late func()) T {
	l.mu.Lock()
	r := l.going
	if r == nil {
		r = &latestRead[T]{done: make(chan struct{})}
		l.going = r
		go func() {
			r.v = read()
			close(r.done)
		}()
	}
	l.mu.Unlock()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.done:
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.going == r {
			l.going, l.last = nil, r.v
		}
		return r.v
	case <-t.C:
		l.mu.Lock()
		defer l.mu.Unlock()
		if !r.warned {
			r.warned = true
			if late != nil {
				late()
			}
		}
		return l.last
	}
}
