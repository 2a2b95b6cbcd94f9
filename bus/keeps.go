package bus

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
)

// keeps are the durable calls whose finals were written to the results
// bucket and whose acknowledgement waits for the bucket's: a caller that
// missed a final (reconnecting) and finds its call acknowledged reads the
// final there (subjects.md: Durable calls). Written without waiting for
// the answer, a final was lost whenever the bucket had no leader at that
// moment (its node down, an election) while the calls stream, replicated
// elsewhere, took the acknowledgement, and the caller ended a call that
// had answered worker_lost.
//
// The bucket answers on one subscription of the worker's (no goroutine
// or request per call): its answer acknowledges the call. A write
// unanswered within keepTry, or refused for the moment (no leader), is
// made again while a sweeper runs, the call marked in progress meanwhile;
// past keepPatience, or once a stop's grace is over, the call is left
// unacknowledged and delivered again (its tool runs again where it may,
// or the next delivery answers that it may have run, and that is kept),
// except on its last delivery, which is acknowledged then, its final not
// kept: delivered no more, the call would end worker_lost, kept over the
// answer its caller got.
// A write the bucket refuses otherwise (full) is not made again: the
// call is acknowledged, its final not kept, as logged. (A final too large
// for one message is never written: keptFinalIn replaced it by a small
// one saying so.) At most maxKeeps
// finals, or maxKeepBytes of them, wait at once (a bucket without a
// leader for long, under a flood of durable calls): past that a final is
// written without waiting and its call acknowledged, as before, so what
// an outage holds is bounded.
type keeps struct {
	mu        sync.Mutex
	sub       *nats.Subscription // on prefix + "*", made on the first write
	prefix    string
	next      uint64
	waiting   map[string]*keepWait // by reply subject
	bytes     int                  // of the waiting finals
	sweeping  bool
	sweeper   sync.WaitGroup // the sweeper, while it runs
	saturated bool           // past the bounds (logged once until below them again)
}

type keepWait struct {
	d          *delivery
	term       bool // answered without running: settled, not acknowledged
	msg        *nats.Msg
	first      time.Time // written first
	sent       time.Time // written last
	again      bool      // refused for the moment: made again at the next sweep
	progressed time.Time // the call last marked in progress
}

// keepTry is how long a write's answer is awaited before it is made
// again, keepPatience how long a final is written again at most;
// keepSweep is the sweeper's period.
const (
	keepTry      = 2 * time.Second
	keepPatience = 30 * time.Second
	keepSweep    = 100 * time.Millisecond
	maxKeeps     = 16384
	maxKeepBytes = 64 << 20
)

// keepThenAck writes the final kept for delivery d (d.keep) and
// acknowledges the call once the bucket has it; with term, it settles
// the call instead (a final sent without running it: replyFinal).
func (w *Worker) keepThenAck(d *delivery, term bool) {
	k := &w.keeps
	msg := d.keep
	d.keep = nil
	k.mu.Lock()
	if k.sub == nil {
		k.prefix = w.nc.NewInbox() + ".kept."
		sub, err := w.nc.Subscribe(k.prefix+"*", w.keptAnswer)
		if err != nil {
			k.mu.Unlock()
			w.log.Warn("bus: could not wait for the results bucket; keeping a durable call's result without waiting", "err", err)
			if err := w.nc.PublishMsg(msg); err != nil {
				w.count.jsErrors.Add(1)
			}
			endKept(d, term)
			return
		}
		k.sub, k.waiting = sub, map[string]*keepWait{}
		w.drops.watch(DroppedReplies, sub)
	}
	if len(k.waiting) >= maxKeeps || k.bytes+len(msg.Data) > maxKeepBytes {
		logIt := !k.saturated
		k.saturated = true
		k.mu.Unlock()
		if logIt {
			w.log.Warn("bus: too many durable calls' results wait for the results bucket; keeping the next ones without waiting", "waiting", maxKeeps, "bytes", maxKeepBytes)
		}
		if err := w.nc.PublishMsg(msg); err != nil {
			w.count.jsErrors.Add(1)
		}
		endKept(d, term)
		return
	}
	k.saturated = false
	k.bytes += len(msg.Data)
	k.next++
	msg.Reply = k.prefix + strconv.FormatUint(k.next, 36)
	now := time.Now()
	k.waiting[msg.Reply] = &keepWait{d: d, term: term, msg: msg, first: now, sent: now, progressed: now}
	w.finishing.Add(1) // Stop waits for the answer
	if !k.sweeping {
		k.sweeping = true
		k.sweeper.Add(1)
		go w.sweepKeeps()
	}
	k.mu.Unlock()
	if err := w.nc.PublishMsg(msg); err != nil {
		k.mu.Lock()
		if kw := k.waiting[msg.Reply]; kw != nil {
			kw.again = true
		}
		k.mu.Unlock()
	}
}

// keptAnswer takes the bucket's answer to a write of keepThenAck.
func (w *Worker) keptAnswer(m *nats.Msg) {
	k := &w.keeps
	k.mu.Lock()
	kw := k.waiting[m.Subject]
	if kw == nil {
		k.mu.Unlock()
		return
	}
	var apiErr *jetstream.APIError
	if !isNoResponders(m) && bytes.Contains(m.Data, []byte(`"error"`)) {
		var a struct {
			Error *jetstream.APIError `json:"error"`
		}
		if json.Unmarshal(m.Data, &a) == nil {
			apiErr = a.Error
		}
	}
	if isNoResponders(m) || apiErr != nil && kv.Transient(apiErr) {
		kw.again = true // no leader for the moment
		k.mu.Unlock()
		return
	}
	delete(k.waiting, m.Subject)
	k.bytes -= len(kw.msg.Data)
	k.mu.Unlock()
	if apiErr != nil {
		w.count.jsErrors.Add(1)
		w.log.Warn("bus: could not keep a durable call's result", "err", apiErr)
	}
	endKept(kw.d, kw.term)
	w.finishing.Add(-1) // once the acknowledgement is out: Stop flushes after
}

// endKept ends a call in the stream once its final is kept:
// acknowledged, or, with term, settled.
func endKept(d *delivery, term bool) {
	if term {
		d.msg.Term()
	} else {
		d.msg.Ack()
	}
}

// sweepKeeps writes again the finals whose writes went unanswered or were
// refused for the moment, while any waits.
func (w *Worker) sweepKeeps() {
	k := &w.keeps
	defer k.sweeper.Done()
	t := time.NewTicker(keepSweep)
	defer t.Stop()
	for range t.C {
		var again, progress []*nats.Msg
		var ended []*keepWait
		given := 0
		now := time.Now()
		// A stop gives the keeps up once its grace is over (it waits for
		// them until then), not as it begins.
		w.mu.Lock()
		stopping := w.interrupting
		w.mu.Unlock()
		k.mu.Lock()
		if len(k.waiting) == 0 {
			k.sweeping = false
			k.mu.Unlock()
			return
		}
		for r, kw := range k.waiting {
			// Marked in progress while it waits, so that a short AckWait
			// does not pass meanwhile (once k.mu is let go).
			if kw.d.redeliver > 0 && now.Sub(kw.progressed) >= kw.d.redeliver/3 {
				progress = append(progress, kw.d.msg)
				kw.progressed = now
			}
			if !kw.again && now.Sub(kw.sent) < keepTry {
				continue
			}
			if stopping || now.Sub(kw.first) >= keepPatience {
				delete(k.waiting, r)
				k.bytes -= len(kw.msg.Data)
				given++
				if kw.d.last() {
					ended = append(ended, kw)
				}
				continue
			}
			kw.again, kw.sent = false, now
			again = append(again, kw.msg)
		}
		k.mu.Unlock()
		if given > 0 {
			// A last delivery's call is not delivered again: left
			// unacknowledged, it would end worker_lost, kept over
			// the answer its caller got. It ends as answered,
			// nothing kept.
			for _, kw := range ended {
				endKept(kw.d, kw.term)
			}
			w.finishing.Add(-int32(given))
			w.count.jsErrors.Add(uint64(given))
			if again := given - len(ended); again > 0 {
				w.log.Warn("bus: could not keep durable calls' results; leaving the calls to be delivered again", "calls", again)
			}
			if len(ended) > 0 {
				w.log.Warn("bus: could not keep the results of durable calls' last deliveries; acknowledging them, their answers sent", "calls", len(ended))
			}
		}
		for _, m := range progress {
			m.InProgress()
		}
		for _, m := range again {
			w.nc.PublishMsg(m)
		}
	}
}

// stop ends the subscription for the bucket's answers, once none is
// awaited (Stop waited for them), and waits for the sweeper, which
// ends at its next look.
func (k *keeps) stop() {
	k.mu.Lock()
	sub := k.sub
	k.mu.Unlock()
	if sub != nil {
		sub.Unsubscribe()
	}
	k.sweeper.Wait()
}
