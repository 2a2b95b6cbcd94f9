package bus

import (
	"sync"
	"sync/atomic"
	"time"
)

// clockTick is how often the worker's clock looks at the running calls
// for heartbeats and abandons; flushSlack is the most a flush comes after
// its FlushDelay.
const (
	clockTick  = 5 * time.Millisecond
	flushSlack = time.Millisecond
	// idleTicks is how many ticks without a running call the clock
	// makes before it stops ticking: calls one after another (one
	// caller) do not wake it once each.
	idleTicks = 200
)

// clock is the worker's one timer goroutine. A call arms no timer of its
// own: the clock reads what NATS dropped every dropCheck (dropped.go),
// flushes held chunks when their FlushDelay is up (the
// deadlines come in order, since the delay is the same for all calls, so
// a queue is enough), and while calls are running it looks at each every
// clockTick to send heartbeats after silence and abandon tools that ignore
// their ended context.
type clock struct {
	w    *Worker
	wake chan struct{} // cap 1
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	queue  []flushEntry // ascending deadlines
	head   int
	idle   bool // not ticking: no call ran for idleTicks ticks; guarded by w.mu
	calls  []*sender
	stopMu sync.Once
	dur    atomic.Pointer[durablePath] // its pull loops are watched too
}

type flushEntry struct {
	s   *sender
	gen uint64
	at  time.Time
}

func newClock(w *Worker) *clock {
	return &clock{w: w, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}), idle: true}
}

// flushAt schedules the flush of hold gen of s.
func (k *clock) flushAt(s *sender, gen uint64, at time.Time) {
	k.mu.Lock()
	first := k.head == len(k.queue)
	k.queue = append(k.queue, flushEntry{s: s, gen: gen, at: at})
	k.mu.Unlock()
	if first {
		k.poke()
	}
}

// poke wakes the clock to recompute when it next has work.
func (k *clock) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// close stops the clock and waits for it.
func (k *clock) close() {
	k.stopMu.Do(func() { close(k.stop) })
	<-k.done
}

func (k *clock) run() {
	defer close(k.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []flushEntry
	var nextTick time.Time // zero: not ticking
	nextDrops := time.Now().Add(dropCheck)
	empty := 0 // ticks in a row without a running call
	for {
		now := time.Now()
		k.mu.Lock()
		for k.head < len(k.queue) && !k.queue[k.head].at.After(now) {
			due = append(due, k.queue[k.head])
			k.queue[k.head] = flushEntry{}
			k.head++
		}
		if k.head == len(k.queue) {
			k.queue, k.head = k.queue[:0], 0
		} else if k.head > 1024 && k.head > len(k.queue)/2 {
			n := copy(k.queue, k.queue[k.head:])
			clear(k.queue[n:])
			k.queue, k.head = k.queue[:n], 0
		}
		var next time.Time
		if k.head < len(k.queue) {
			// Flushes due within flushSlack of each other are done in one
			// wake-up, not one each (at a call every few µs, they would
			// keep the clock busy).
			next = k.queue[k.head].at
			if soon := now.Add(flushSlack); next.Before(soon) {
				next = soon
			}
		}
		k.mu.Unlock()
		for i := range due {
			due[i].s.flushDue(due[i].gen)
		}
		clear(due)
		due = due[:0]

		if nextTick.IsZero() || !now.Before(nextTick) {
			k.w.mu.Lock()
			k.calls = k.calls[:0]
			for _, s := range k.w.calls {
				k.calls = append(k.calls, s)
			}
			if empty++; len(k.calls) > 0 {
				empty = 0
			}
			idle := empty >= idleTicks
			k.idle = idle // read by started, under w.mu
			k.w.mu.Unlock()
			for _, s := range k.calls {
				s.check(now)
			}
			k.w.watchInline(now)
			if d := k.dur.Load(); d != nil {
				d.watchInline(now)
				d.recheck(now)
			}
			nextTick = time.Time{}
			if !idle {
				nextTick = now.Add(clockTick)
			}
			clear(k.calls)
		}
		if !now.Before(nextDrops) {
			// Also while idle: a stuck or starved worker may run no
			// call while NATS drops its messages.
			k.w.checkDrops()
			nextDrops = now.Add(dropCheck)
		}
		if !nextTick.IsZero() && (next.IsZero() || nextTick.Before(next)) {
			next = nextTick
		}
		if next.IsZero() || nextDrops.Before(next) {
			next = nextDrops
		}
		t.Reset(max(time.Until(next), 0))
		select {
		case <-t.C:
		case <-k.wake:
			// A flush was scheduled on an empty queue, or a call started
			// while the clock was idle: tick again, and for idleTicks
			// ticks at least.
			if nextTick.IsZero() {
				nextTick = time.Now().Add(clockTick)
			}
			empty = 0
		case <-k.stop:
			return
		}
	}
}

// started notes a new call; w.mu is held. It reports whether the clock
// must be poked (after w.mu is released) to start ticking.
func (k *clock) started() bool {
	if !k.idle {
		return false
	}
	k.idle = false
	return true
}
