package skill

import (
	"sync"
	"time"
)

// latest is a value read by a function that may not return for long (a
// skills directory on a mount that stopped answering): get runs one read
// at a time, which every get made meanwhile shares, and waits for it at
// most a while; past that it returns what the last finished read gave,
// while the read goes on. A read that does not return holds one
// goroutine, whatever the number of gets. Its zero value is ready for
// use.
type latest[T any] struct {
	mu    sync.Mutex
	last  T
	going *latestRead[T] // a read under way; nil when none
	read  bool           // a read has finished: last is one's value
}

// finished reports whether a read has finished, so that get has a value
// read to fall back on.
func (l *latest[T]) finished() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.read
}

type latestRead[T any] struct {
	done    chan struct{}
	v       T
	started time.Time
	warned  time.Time // when its lateness was last reported; zero: never
}

// lateEvery is how often a read that stays late is reported again (a
// variable for tests).
var lateEvery = time.Minute

// start begins a read, unless one is under way, and returns the one
// under way: a caller with several values to read starts them all
// before it waits for any.
func (l *latest[T]) start(read func() T) *latestRead[T] {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.going
	if r == nil {
		r = &latestRead[T]{done: make(chan struct{}), started: time.Now()}
		l.going = r
		go func() {
			v := read()
			l.mu.Lock()
			r.v, l.last, l.going, l.read = v, v, nil, true
			l.mu.Unlock()
			close(r.done)
		}()
	}
	return r
}

// get returns read's value when a read (this one, or one under way)
// finishes within wait, and otherwise the last value read and how long
// the read under way has been going (0 when the value is fresh). It
// calls late, with that time, when the read is first late and then at
// most every lateEvery while it stays so, outside get's lock.
func (l *latest[T]) get(read func() T, wait time.Duration, late func(going time.Duration)) (T, time.Duration) {
	r := l.start(read)
	select {
	case <-r.done:
		return r.v, 0
	default:
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-r.done:
			return r.v, 0
		case <-t.C:
		}
	}
	l.mu.Lock()
	if l.going != r { // it finished meanwhile
		l.mu.Unlock()
		return r.v, 0
	}
	now := time.Now()
	going := max(now.Sub(r.started), time.Nanosecond)
	report := r.warned.IsZero() || now.Sub(r.warned) >= lateEvery
	if report {
		r.warned = now
	}
	last := l.last
	l.mu.Unlock()
	if report && late != nil {
		late(going)
	}
	return last, going
}
