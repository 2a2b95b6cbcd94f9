package bus

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// How the worker takes calls from its inbox (leader and followers).
//
// One reader at a time, the leader, receives from the inbox. A call of a
// quick tool (its last quickAfter runs each ended within quickLimit) runs
// on the leader itself, and the leader goes on receiving: a stream of
// quick calls is drained by one goroutine without waking another per
// call, and their finals leave in the batches a plain NATS replier's
// would. Any other call makes the leader pass leadership on (to a
// follower waiting for it, or to a new reader) and run the call on its
// own goroutine, so the call still reaches its goroutine in one hop.
// A quick call that turns out slow is caught by the worker's clock,
// which passes leadership on for it (the calls behind it waited at most
// inlineLimit plus a clock tick) and marks the tool slow for a while.
// After its call a reader follows (waits to lead again) or, when
// idleReaders already wait, ends, so a burst's goroutines do not stay.

const (
	// quickLimit is the longest run that counts as quick.
	quickLimit = 200 * time.Microsecond
	// quickAfter is how many quick runs in a row make a tool run on the
	// leader.
	quickAfter = 16
	// slowPenalty is how many quick runs a tool caught holding the
	// leader must make before it runs there again.
	slowPenalty = 1024
	// inlineLimit is how long the leader may run one call before the
	// clock passes leadership on.
	inlineLimit = 2 * time.Millisecond
	// quickBacklog is how many calls may wait in the inbox while the
	// leader runs a quick one: beyond it the leader passes leadership on
	// and runs the call on its own goroutine, so that quick tools which
	// use the CPU spread over the cores when calls pile up.
	quickBacklog = 256
)

// pace is what the worker learned of a tool's run times: its quick runs
// in a row (negative after a penalty).
type pace struct{ streak atomic.Int32 }

func (p *pace) quick() bool { return p.streak.Load() >= quickAfter }

func (p *pace) record(took time.Duration) {
	if took > quickLimit {
		// A compare-and-swap: a penalty set meanwhile stays.
		for v := p.streak.Load(); v > 0 && !p.streak.CompareAndSwap(v, 0); v = p.streak.Load() {
		}
		return
	}
	if p.streak.Load() < 1<<20 {
		p.streak.Add(1)
	}
}

func (p *pace) penalize() { p.streak.Store(-slowPenalty) }

// readers is the bookkeeping of the worker's reader goroutines.
type readers struct {
	mu      sync.Mutex
	alive   int
	max     int
	waiting int  // followers committed to receive from baton
	vacant  bool // nobody leads: the next reader to finish a call does
	closed  bool // the inbox is closed: readers end
	baton   chan struct{}

	inline inlined // the call the leader runs itself
}

// inlined is the call a loop that takes calls (the leading reader, a
// durable pull loop) runs itself; the clock may take the loop from it.
type inlined struct{ s atomic.Pointer[sender] }

// run runs s, which holds its slot, on the loop; false when the clock
// handed the loop on meanwhile.
func (in *inlined) run(s *sender) bool {
	in.s.Store(s)
	if s.isDone() {
		<-s.w.slots // answered meanwhile (a cancel): it does not run
	} else {
		s.runSlotted()
	}
	return in.s.CompareAndSwap(s, nil)
}

// overdue reports whether the call on the loop has run for inlineLimit,
// and if so takes the loop from it and marks its tool slow for a while:
// the caller hands the loop on.
func (in *inlined) overdue(now time.Time) bool {
	s := in.s.Load()
	if s == nil || now.Sub(s.started) < inlineLimit || !in.s.CompareAndSwap(s, nil) {
		return false
	}
	s.tool.pace.penalize()
	return true
}

// quickSlot reports whether s may run on the loop that took it, and takes
// its slot if so: its tool is quick and a slot is free now.
func (w *Worker) quickSlot(s *sender) bool {
	if s.tool == nil || !s.tool.pace.quick() {
		return false
	}
	select {
	case w.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// reader leads, runs the call it is handed, follows, and so on until the
// inbox is closed or enough readers wait.
func (w *Worker) reader() {
	for {
		s, ok := w.lead()
		if !ok {
			return
		}
		if s != nil {
			s.run()
		}
		if !w.follow() {
			return
		}
	}
}

// lead receives calls while this reader leads. It returns the call this
// reader is to run after it passed leadership on; nil when leadership was
// taken from it during a call it ran inline; false when the inbox is
// closed.
func (w *Worker) lead() (*sender, bool) {
	for {
		w.mayHold.Add(1) // before the receive: see waitIdle
		m, ok := <-w.inbox
		if !ok {
			w.mayHold.Add(-1)
			w.rd.close()
			return nil, false
		}
		if w.beforeAccept != nil {
			w.beforeAccept(m)
		}
		mem, ok := w.inputs.tryAcquire(inputNeed(m))
		if !ok {
			// Waiting for input memory holds up the calls behind it: not
			// while leading. The waiting call holds only its body.
			w.handOff()
			return w.takeWaiting(m), true
		}
		if w.dur != nil && w.dur.byDefault(callTool(m.Subject)) {
			// Queuing the call waits on JetStream: not while leading.
			w.handOff()
			s := w.onCall(m, mem)
			w.mayHold.Add(-1)
			if s == nil {
				w.inputs.release(mem)
				return nil, true
			}
			return s, true
		}
		s := w.onCall(m, mem)
		w.mayHold.Add(-1)
		if s == nil {
			w.inputs.release(mem)
			continue
		}
		if w.afterAccept != nil {
			w.afterAccept(s)
		}
		if !w.inlinable(s) {
			w.handOff()
			return s, true
		}
		if !w.rd.inline.run(s) {
			return nil, true // the clock passed leadership on
		}
	}
}

// takeWaiting takes the call m once the input memory it needs is given
// back (waitForInput), on the reader that received it, which passed
// leadership on. Not inlined: its incoming stays off the leader's frame.
//
//go:noinline
func (w *Worker) takeWaiting(m *nats.Msg) *sender {
	var in incoming
	in.from(m)
	w.arrived(m)
	in.mem = w.waitForInput(&in, inputNeed(m))
	s := w.accept(&in)
	w.mayHold.Add(-1)
	if s == nil {
		w.inputs.release(in.mem)
	}
	return s
}

// inlinable reports whether s runs on the leader, and takes its slot if
// so: a quick tool's call on the plain core path, with a slot free now.
func (w *Worker) inlinable(s *sender) bool {
	return s.in == nil && !s.keep && s.dur == nil && len(w.inbox) <= quickBacklog && w.quickSlot(s)
}

// handOff passes leadership on: to a waiting follower, else to a new
// reader, else (all readers busy) to the next reader that finishes a
// call. Only the leader calls it (or the clock, for a leader stuck in a
// call).
func (w *Worker) handOff() {
	r := &w.rd
	r.mu.Lock()
	switch {
	case r.waiting > 0:
		r.waiting--
		r.mu.Unlock()
		r.baton <- struct{}{}
	case r.alive < r.max:
		r.alive++
		r.mu.Unlock()
		go w.reader()
	default:
		r.vacant = true
		r.mu.Unlock()
	}
}

// follow waits until this reader leads again; false when it is to end
// instead.
func (w *Worker) follow() bool {
	r := &w.rd
	r.mu.Lock()
	switch {
	case r.closed || (!r.vacant && r.waiting >= idleReaders):
		r.alive--
		r.mu.Unlock()
		return false
	case r.vacant:
		r.vacant = false
		r.mu.Unlock()
		return true
	}
	r.waiting++
	r.mu.Unlock()
	if _, ok := <-r.baton; !ok {
		r.mu.Lock()
		r.alive--
		r.mu.Unlock()
		return false
	}
	return true
}

// close ends the followers once the leader found the inbox closed.
func (r *readers) close() {
	r.mu.Lock()
	r.closed = true
	r.alive--
	r.mu.Unlock()
	close(r.baton)
}

// watchInline is the clock's look at the leader: a call it has run for
// inlineLimit makes it pass leadership on, and the call's tool runs on
// its own goroutine for a while.
func (w *Worker) watchInline(now time.Time) {
	if w.rd.inline.overdue(now) {
		w.handOff()
	}
}
