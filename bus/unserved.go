package bus

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// A tool removed while its calls are on their way (subjects.md). A worker
// whose tool is removed stops taking its calls, but calls already
// delivered to it and not yet run remain, and a pinned call may name a
// tool it never served. None of them is answered not_found while the
// fleet may still serve the tool: a core call is passed on, once, to the
// tool's queue group; a durable call of a tool that may run again is
// handed back to the queue, one of another tool answered unavailable,
// saying it did not run (handed back, its next delivery would be refused
// as one that may have run).

// unserved handles a call of a tool this worker does not serve. It
// reports false for a call passed on once already, which is then
// answered as usual: not_found. A core call passed on goes on numbered
// after the frames its caller heard here (heartbeats while it waited for
// input memory) and, given a deadline (it waited), with what is left of
// its timeout. session is the call's (its span's), scope its session
// scope.
func (w *Worker) unserved(in *incoming, c wire.Codec, id, session, scope string, deadline time.Time) bool {
	if in.dur != nil {
		if in.dur.repeatable {
			in.dur.handBackLater()
		} else {
			w.replyFinal(in, c, w.notServed(in.dur, in.tool, id), session)
			w.settle(in.dur)
		}
		return true
	}
	if in.header.Get(wire.HeaderUnserved) != "" {
		return false
	}
	return w.passOn(context.Background(), in, c, id, session, scope, in.seqAfter(), deadline, false)
}

// notRunHere passes on a core call a stopping worker took past its
// grace, which it does not run, once, to its tool's queue group: another
// worker runs it (none there, it is answered interrupted). It reports
// false when it did not: the call is answered interrupted here.
func (w *Worker) notRunHere(in *incoming, c wire.Codec, id, session, scope string, deadline time.Time) bool {
	if in.dur != nil || in.header.Get(wire.HeaderUnserved) != "" {
		return false
	}
	return w.passOn(context.Background(), in, c, id, session, scope, in.seqAfter(), deadline, true)
}

// passOn publishes a core call to its tool's queue group, marked with
// HeaderUnserved and with the caller's reply subject in HeaderReply. Its
// own reply subject is the worker's: should no worker subscribe, the
// server's no-responders status comes back here (only the publisher gets
// it), and the worker answers the caller not_found, as it would have
// without passing the call on (stopping: interrupted, as a stopping
// worker answers a call it does not run). session is the call's, for the
// span of its answer should it come back; scope is its session scope; ctx
// carries the call's span on this worker, if any, whose child
// the next worker's is. It reports false when the publish failed
// (logged).
func (w *Worker) passOn(ctx context.Context, in *incoming, c wire.Codec, id, session, scope string, seq uint64, deadline time.Time, stopping bool) bool {
	// The removed tool's subscriptions are drained first, should the
	// toolkit's change not have reached them yet: their UNSUB precedes
	// the call on the connection, so the group cannot hand it back here.
	w.mu.Lock()
	if _, subscribed := w.subs[in.tool]; subscribed {
		if err := w.syncLocked(); err != nil {
			w.log.Error("bus: following toolkit changes", "err", err)
		}
	}
	w.mu.Unlock()
	h := make(nats.Header, len(in.header)+2)
	for k, v := range in.header {
		h[k] = v
	}
	h = injectTrace(ctx, h)
	h.Set(wire.HeaderUnserved, w.opts.Instance)
	h.Set(wire.HeaderReply, in.reply)
	// This worker cannot run the call: should the session be pinned here,
	// the receiving worker takes it over rather than send the call back,
	// at once, without the probe this worker's memory of holding the pin
	// counts on (affinity.trust): from now on it reads the pin.
	h.Set(wire.HeaderPinLost, w.opts.Instance)
	// A Toolbus-Forwarded, set by the worker that passed the call on to
	// this one as the session's, is news of that hop only: carried on,
	// the receiving worker would take the call for one forwarded to it,
	// and answer it unavailable should the session be pinned to another
	// live worker, instead of passing it there. Toolbus-Unserved, which
	// stays on the call, keeps it from going around: it is forwarded at
	// most once more, and passed on no further.
	h.Del(wire.HeaderForwarded)
	if seq > 0 { // frames (heartbeats) this worker sent the caller already
		h.Set(wire.HeaderSeqAfter, strconv.FormatUint(seq, 10))
	}
	if !deadline.IsZero() && h.Get(wire.HeaderTimeout) != "" {
		h.Set(wire.HeaderTimeout, strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 0), 10))
	}
	// Kept with the headers it is passed on with: should it come back
	// unserved, its not_found is numbered after the frames sent already
	// (HeaderSeqAfter), or the caller drops it as an old frame.
	passed := *in
	passed.header = h
	passed.beats = 0 // in h's HeaderSeqAfter
	why := "bus: passing on a call of a tool no longer served"
	if stopping {
		why = "bus: passing on a call the stopping worker did not run"
	}
	if w.opts.Tracer == nil {
		session = "" // kept only for a span
	}
	reply, err := w.passed.add(w, &passed, c, id, session, stopping)
	if err != nil {
		w.log.Warn(why, "tool", in.tool, "call", id, "err", err)
		return false
	}
	if w.aff != nil {
		w.aff.forget(scope)
	}
	m := &nats.Msg{Subject: wire.CallSubject(in.tool, in.identity), Reply: reply, Header: h, Data: in.data}
	if err := w.nc.PublishMsg(m); err != nil {
		w.passed.take(reply)
		w.log.Warn(why, "tool", in.tool, "call", id, "err", err)
		return false
	}
	w.log.Debug(why, "tool", in.tool, "call", id)
	return true
}

// passedCalls are the calls passed on whose no-responders status may
// still come back: a status comes within a round trip, so one passed on
// more than passedKeep ago is forgotten (when the next is passed on). At
// most maxPassed wait at once: a flood of calls of tools nobody serves
// (on a worker's pinned subject, say) is answered where it arrives.
type passedCalls struct {
	mu     sync.Mutex
	sub    *nats.Subscription // on prefix + "*", made on the first pass
	prefix string
	next   uint64
	calls  map[string]passedCall // by reply subject
	order  []string              // reply subjects, oldest first
}

type passedCall struct {
	in       incoming // the call as the worker received it (no body)
	c        wire.Codec
	id       string
	session  string // a copy, for the span of its answer; "" without a tracer
	at       time.Time
	stopping bool // passed on by a stopping worker, not for its tool
}

// passedKeep is how long a passed call's no-responders status is awaited;
// maxPassed bounds the calls waiting for it.
const (
	passedKeep = 10 * time.Second
	maxPassed  = 4096
)

// add registers a call about to be passed on and returns its reply
// subject.
func (p *passedCalls) add(w *Worker, in *incoming, c wire.Codec, id, session string, stopping bool) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sub == nil {
		p.prefix = w.nc.NewInbox() + ".unserved."
		sub, err := w.nc.Subscribe(p.prefix+"*", w.passedBack)
		if err != nil {
			return "", err
		}
		p.sub, p.calls = sub, map[string]passedCall{}
		w.drops.watch(DroppedReplies, sub)
	}
	now := time.Now()
	for len(p.order) > 0 {
		old, ok := p.calls[p.order[0]]
		if ok && now.Sub(old.at) < passedKeep {
			break
		}
		delete(p.calls, p.order[0])
		p.order = p.order[1:]
	}
	if len(p.order) >= maxPassed {
		// Answered ones behind a call still waiting: keep the others.
		p.order = slices.DeleteFunc(p.order, func(r string) bool { _, ok := p.calls[r]; return !ok })
	}
	if len(p.order) >= maxPassed {
		return "", fmt.Errorf("%d calls passed on are waiting already", len(p.order))
	}
	p.next++
	reply := p.prefix + strconv.FormatUint(p.next, 36)
	kept := *in
	kept.data, kept.dur = nil, nil
	// The session is a copy: it may share the request's body, which is
	// not kept.
	p.calls[reply] = passedCall{in: kept, c: c, id: id, session: strings.Clone(session), at: now, stopping: stopping}
	p.order = append(p.order, reply)
	return reply, nil
}

// take removes and returns the call passed on with reply subject reply.
func (p *passedCalls) take(reply string) (passedCall, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pc, ok := p.calls[reply]
	delete(p.calls, reply)
	return pc, ok
}

// stop ends the subscription for no-responders statuses once those on
// their way are answered (a status comes within a round trip, and the
// stop flushed the connection first): the callers of calls passed on
// just before the stop get their not_found. It waits at most
// stopFlushTimeout, as the stop's flush does.
func (p *passedCalls) stop() {
	p.mu.Lock()
	sub := p.sub
	p.mu.Unlock()
	if sub == nil {
		return
	}
	if sub.Drain() == nil {
		deadline := time.Now().Add(stopFlushTimeout)
		for sub.IsValid() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	sub.Unsubscribe()
}

// passedBack answers the caller of a call passed on to a queue group
// nobody subscribes to: not_found, or interrupted when a stopping worker
// passed it on.
func (w *Worker) passedBack(m *nats.Msg) {
	if !isNoResponders(m) {
		return
	}
	if w.onPassedBack != nil {
		w.onPassedBack()
	}
	pc, ok := w.passed.take(m.Subject)
	if !ok {
		return
	}
	if pc.stopping {
		w.replyFinal(&pc.in, pc.c, w.drainedFinal(pc.id), pc.session)
		return
	}
	nf := toolkit.NotFound(pc.in.tool)
	w.replyFinal(&pc.in, pc.c, w.finalFor(pc.id, nf.Code, nf.Message), pc.session)
}

// unserved ends a call that holds its slot and whose tool was removed
// since it was taken, as Worker.unserved does; it gives the slot back.
// It reports false for a call passed on once already, which then runs
// on (and is answered not_found).
func (s *sender) unserved() bool {
	if s.dur == nil && s.hdr.Get(wire.HeaderUnserved) != "" {
		return false
	}
	if s.dur != nil && !s.dur.repeatable {
		<-s.w.slots
		s.refuse()
		s.final(s.w.notServed(s.dur, s.call.Name, s.id))
		return true
	}
	return s.handedOn(false)
}

// notRunHere passes on a core call that its stopping worker cancelled
// past its grace before its tool ran, as Worker.notRunHere does one
// taken then: once, to its tool's queue group. runSlotted asks before
// the call's dispatch and, should the toolkit have skipped its tool
// (ToolNotRun: cancelled while its middleware ran), after it. It reports
// false when it did not: the call runs on here and ends interrupted.
func (s *sender) notRunHere() bool {
	if s.dur != nil || s.ctx.Err() == nil || context.Cause(s.ctx) != toolkit.ErrDraining || s.hdr.Get(wire.HeaderUnserved) != "" {
		return false
	}
	return s.handedOn(true)
}

// handedOn gives up the call's slot to another worker: a durable call
// back to the queue, a core call passed on once to its tool's queue
// group (stopping: by a stopping worker, see passOn). It reports false
// when the pass-on failed, or when the call's caller heard some of its
// output from here (a middleware's chunks, the call dispatched; its
// progress reports need not stop it): the call runs on here.
func (s *sender) handedOn(stopping bool) bool {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		<-s.w.slots
		return true
	}
	if s.chunks > 0 {
		s.mu.Unlock()
		return false
	}
	to := wire.DurableSubject(s.call.Name, s.call.Identity)
	if s.dur != nil {
		s.dur.handBackLater()
	} else {
		to = wire.CallSubject(s.call.Name, s.call.Identity)
		deadline, _ := s.ctx.Deadline()
		if !s.w.passOn(s.ctx, &incoming{tool: s.call.Name, identity: s.call.Identity, reply: s.reply, header: s.hdr, data: s.data}, s.codec, s.id, s.call.Session, s.call.Scope(), s.seq, deadline, stopping) {
			s.mu.Unlock()
			return false
		}
	}
	if s.span != nil {
		// It did not run here: the worker that takes it records that.
		routeSpan(s.span, s.call.Name, to)
	}
	s.silenceLocked()
	s.mu.Unlock()
	<-s.w.slots
	s.release()
	return true
}

// notServed is the final of a durable call of a tool that may not run
// again and is no longer served here: worker_lost when an earlier
// delivery may have run it, else unavailable, saying it did not run.
func (w *Worker) notServed(d *delivery, tool, id string) *toolkit.Response {
	if d.attempt > 1 {
		return w.finalFor(id, toolkit.CodeWorkerLost, mayHaveRunText(tool, d.attempt))
	}
	return w.finalFor(id, toolkit.CodeUnavailable, fmt.Sprintf(
		"ToolUnavailableError: worker %s took this durable call of '%s' from the queue and then stopped serving the tool; the call did not run. The tool is not declared idempotent, so it is not handed back to the queue: send the call again under a new call id.",
		w.opts.Instance, tool))
}
