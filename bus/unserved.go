package bus

import (
	"fmt"

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
// answered as usual: not_found.
func (w *Worker) unserved(in *incoming, c wire.Codec, id string) bool {
	if in.dur != nil {
		switch {
		case in.dur.repeatable:
			in.dur.handBackLater()
		case in.dur.attempt > 1:
			w.mayRepeat(in, c, id) // an earlier delivery may have run it
		default:
			w.replyFinal(in, c, w.finalFor(id, toolkit.CodeUnavailable, notServedText(w.opts.Instance, in.tool)))
			in.dur.settle()
		}
		return true
	}
	if in.header.Get(wire.HeaderUnserved) != "" {
		return false
	}
	return w.passOn(in, id)
}

// passOn publishes a core call, unchanged but for HeaderUnserved, to its
// tool's queue group; false when that failed (logged).
func (w *Worker) passOn(in *incoming, id string) bool {
	h := make(nats.Header, len(in.header)+1)
	for k, v := range in.header {
		h[k] = v
	}
	h.Set(wire.HeaderUnserved, w.opts.Instance)
	m := &nats.Msg{Subject: wire.CallSubject(in.tool, in.identity), Reply: in.reply, Header: h, Data: in.data}
	if err := w.nc.PublishMsg(m); err != nil {
		w.log.Warn("bus: passing on a call of a tool no longer served", "tool", in.tool, "call", id, "err", err)
		return false
	}
	w.log.Debug("bus: passed on a call of a tool no longer served", "tool", in.tool, "call", id)
	return true
}

// unserved ends a call that holds its slot and whose tool was removed
// since it was taken, as Worker.unserved does; it gives the slot back.
// It reports false for a call passed on once already, which then runs
// on (and is answered not_found).
func (s *sender) unserved() bool {
	if s.dur == nil && s.hdr.Get(wire.HeaderUnserved) != "" {
		return false
	}
	<-s.w.slots
	if s.dur != nil && !s.dur.repeatable {
		s.refused = true
		if s.dur.attempt > 1 {
			s.final(s.w.finalFor(s.id, toolkit.CodeWorkerLost, mayHaveRunText(s.call.Name, s.dur.attempt)))
		} else {
			s.final(s.w.finalFor(s.id, toolkit.CodeUnavailable, notServedText(s.w.opts.Instance, s.call.Name)))
		}
		return true
	}
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return true
	}
	s.silenceLocked()
	if s.dur != nil {
		s.dur.handBackLater()
	} else {
		s.w.passOn(&incoming{tool: s.call.Name, identity: s.call.Identity, reply: s.reply, header: s.hdr, data: s.data}, s.id)
	}
	s.mu.Unlock()
	s.release()
	return true
}

func notServedText(instance, tool string) string {
	return fmt.Sprintf("ToolUnavailableError: worker %s took this durable call of '%s' from the queue and then stopped serving the tool; the call did not run. The tool is not declared idempotent, so it is not handed back to the queue: send the call again under a new call id.", instance, tool)
}
