package bus

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/callspan"
	"github.com/toolbus/toolbus/toolkit"
	"go.opentelemetry.io/otel/trace"
)

// item is a chunk or a progress report held back before the first flush.
type item struct {
	chunk    toolkit.Chunk
	progress toolkit.Progress
	isChunk  bool
}

// sender is one call on the worker: it runs the call and is the call's
// toolkit.Writer. Every frame is numbered and published under the sender's
// lock on the worker's one connection, so the frames of a call go out in
// order whichever goroutine produced them (the tool's, or the worker's
// clock for heartbeats, flushes and abandons).
type sender struct {
	w     *Worker
	reply string
	id    string
	key   string     // in Worker.calls: the id, scoped by the caller's identity
	mem   int        // taken from Worker.inputs, given back by release
	dur   *delivery  // the durable delivery; nil on the core path
	tool  *toolState // its tool's run times and numbers; nil for a tool not served
	in    *incoming  // a session-bound call's request, for affinity; nil otherwise
	// A core call's request headers and body, to pass the call on should
	// its tool be removed before it runs (unserved).
	hdr  nats.Header
	data []byte
	pin  pin
	// movedNote is the note that the call moved its session (pinned),
	// under mu: in the final's content, and a last chunk when the final
	// goes out after chunks (finalLocked), whenever they went.
	movedNote string
	keep      bool // store the final for Client.Result
	// keepID is the id the final is stored under: the call's, or the one
	// its caller gave a retry (wire.HeaderKeepResult); keepKey its key.
	keepID, keepKey string
	kept            bool // stored already (a core call's, waited for before the final)
	// attempt is which attempt of its call a core call that keeps its
	// final is (keptAttempt), or a durable call's delivery: a later
	// attempt's kept final stays.
	attempt uint64
	batch   bool // the caller reads chunk frames with more chunks (wire.Request.More)
	refused bool // answered overloaded without running: no run time to count
	unrun   bool // refused by the toolkit (toolkit.RefusalWriter): reported with its final
	skipped bool // its tool not entered, its context ended first (toolkit.NotRunWriter)
	// ran: its tool was entered and the call did not succeed
	// (toolkit.RanWriter); kept with its final (keptOf). Under mu.
	ran     bool
	codec   wire.Codec
	hbEvery time.Duration
	call    toolkit.ToolCall
	ctx     context.Context
	cancel  context.CancelCauseFunc
	stopT   context.CancelFunc // the timeout's timer; nil without one
	span    trace.Span         // the call's span; nil without WorkerOptions.Tracer
	// ending is the final to report (noteEnd) once a final frame is
	// about to go out: the one the caller gets, which is an internal
	// final when the tool's output or final could not be sent. Nil
	// before finalLocked and once reported.
	ending *toolkit.Response

	mu        sync.Mutex
	done      bool // the final is out; writes fail with ErrStopped
	seq       uint64
	chunks    uint64    // chunks sent (those batched in one frame each count)
	streaming bool      // chunks were flushed: the final will not carry the content
	hb        *holdBufs // the held items, from holdPool while the call holds any
	heldSize  int
	holdGen   uint64         // counts scheduled flushes; the clock's names the one it is for
	flushSet  bool           // a flush is scheduled for what is held
	sendErr   error          // a chunk that could not be sent
	sentMeta  map[string]any // the sent chunks' metadata, merged as the caller accumulates it
	parts     int            // ids generated for split data blocks
	logs      int            // log messages the tool sent
	lastPub   time.Time
	abandonAt time.Time // set when the clock first sees the ctx done
	lastAlive time.Time // durable: when JetStream was last told the call is in progress
	started   time.Time // when the worker took the call
	// Probes of the caller's inbox (callergone.go): probeTok names the
	// call's probes (set once, under w.mu too); probeN counts them and
	// probeAt is when the last went; heardN is the last one the server
	// answered no responders, goneSince when the first of such a run of
	// probes went.
	probeTok           string
	probeN, heardN     uint64
	probeAt, goneSince time.Time
}

// maxLogsPerCall bounds the log messages one call sends its caller.
const maxLogsPerCall = 1000

// holdLimit is the most bytes held back before a flush: the held items'
// content (a progress report's message), minHeldSize at least each.
const holdLimit = 32 << 10

// minHeldSize is what a held item counts against holdLimit at least, so
// that a tool sending small or empty items (progress reports, empty
// chunks) in a loop has them sent on, not held in their thousands.
const minHeldSize = 64

// run runs the call on the calling goroutine and publishes its final. The
// call counts against MaxInFlight while its tool runs; one that would run
// past it waits up to overloadWait for a call to end, then is answered
// overloaded.
//
// The frames from here down to the tool, and down to the publish of the
// chunks a final sends on, stay small: a call's goroutine starts with a
// 4 KB stack, which Go doubles by copying it the first time the call goes
// deeper. A waiting call would then hold 8 KB (BenchmarkWaitingCall
// shows the stack a waiting call holds), and every streamed call would
// pay a copy at its final. So the work beside that path is done in
// functions that return before it goes on (routed, keepBeforeFinal,
// sendSplit; noteEnding, which publishTo calls once a final is encoded,
// returns before the publish: its frames and the publish's are not on
// the stack at once), and a function holding
// a wire.Frame, a nats.Msg or a map's iterator on its stack is not
// inlined into the frames above it (publishFinal, publishChunks,
// sentMetadata, publishMsg).
func (s *sender) run() {
	if s.in != nil && s.routed() {
		return
	}
	if s.dur != nil {
		// Pulled because there was room: it waits for its slot (the
		// clock keeps telling JetStream it is in progress), unless it
		// ends meanwhile.
		select {
		case s.w.slots <- struct{}{}:
		case <-s.ctx.Done():
			s.endedWaiting()
			return
		}
	} else if !s.w.takeSlot() {
		s.refuse()
		s.final(s.w.overloaded(s.id))
		return
	}
	if s.isDone() {
		// Answered while it was routed or waited for its slot, and
		// released: the tool does not run after its final.
		<-s.w.slots
		return
	}
	s.runSlotted()
}

// endedWaiting answers a durable call that ended while it waited for its
// slot (its caller cancelled it, its deadline passed, the worker stops)
// as one that ended before it ran: at once, not when the clock gives up
// on a tool that ignores its ended context (AbandonAfter).
func (s *sender) endedWaiting() {
	s.w.finishing.Add(1) // until released, as in final
	defer s.w.finishing.Add(-1)
	s.mu.Lock()
	if s.done { // the clock answered it meanwhile
		s.mu.Unlock()
		return
	}
	s.refused = true
	if !s.handBackLocked() {
		if c := context.Cause(s.ctx); c == toolkit.ErrCallerCancelled || errors.Is(c, context.DeadlineExceeded) {
			s.w.count.cancelled.Add(1)
		}
		s.finalLocked(s.abandoned())
	}
	s.mu.Unlock()
	s.release()
}

// routed passes a session-bound call to the worker its session is pinned
// to, when that is another (affinity), and reports whether it did: the
// call is then that worker's, or answered here when it could not be
// passed on.
func (s *sender) routed() bool {
	var to string
	var d detour
	s.pin, to, d = s.w.aff.route(s.in, s.call.Scope())
	if err := d.unkeyed; err != nil {
		// A session that cannot be pinned (its key is over the bucket's
		// bound): run here, its calls would each keep their state on
		// whichever worker took them, and no final would say so. The
		// caller's input is at fault, as for a group-gated tool's call of
		// it: invalid_input, which no caller retries.
		s.refuse()
		s.final(s.w.finalFor(s.id, toolkit.CodeInvalidInput, fmt.Sprintf(
			"BadRequestError: '%s' keeps its state on one worker per session, and this session cannot be pinned to one: %v. It did not run; use a shorter session name.",
			s.call.Name, err)))
		return true
	}
	if to == "" && d.elsewhere == "" {
		return false
	}
	if to == "" {
		resp := s.w.finalFor(s.id, toolkit.CodeUnavailable, fmt.Sprintf(
			"ToolUnavailableError: this session's stateful tools moved to worker %s while the call was on its way to worker %s. It did not run; send it again.",
			d.elsewhere, s.w.opts.Instance))
		resp.Metadata[wire.MetaSessionWorker] = d.elsewhere // where a Go client sends it again
		s.refuse()
		s.final(resp)
		return true
	}
	// Silent here before the pinned worker answers, which numbers
	// its frames after the heartbeats sent from here meanwhile.
	s.mu.Lock()
	if s.done {
		// Answered while it was routed (its deadline, a cancel),
		// and released: nothing goes on.
		s.mu.Unlock()
		return true
	}
	// Out of the calls running here before it is passed on: the
	// pinned worker passes it back through the queue group when it
	// lacks the tool (Toolbus-Pin-Lost), and this worker takes it
	// then as a call of its own, not refused as one already
	// running. Passed on before it is silenced here, so that a
	// pass-on that fails is answered here instead of nowhere.
	// Counted in finishing meanwhile: Stop waits until it is
	// passed on or answered.
	s.w.finishing.Add(1)
	defer s.w.finishing.Add(-1)
	s.untrack()
	if err := s.w.aff.forward(s.ctx, s.in, to, s.seq); err != nil {
		s.refused = true
		s.mu.Unlock()
		s.final(s.w.notForwarded(s.id, to, err))
		return true
	}
	if s.span != nil {
		// Not the call's execution, which the pinned worker records
		// (as this span's child: forward passes it on).
		routeSpan(s.span, s.call.Name, to)
	}
	s.silenceLocked()
	s.mu.Unlock()
	s.release()
	return true
}

// runSlotted is run once the call holds its slot.
func (s *sender) runSlotted() {
	if _, served := s.w.tk.Get(s.call.Name); !served && s.unserved() {
		return // the tool was removed since the call was taken
	}
	if s.notRunHere() {
		return // its worker stopped past its grace before it ran
	}
	var unkeep func()
	if s.pin.here {
		unkeep = s.w.aff.keep(s.call.Scope())
	}
	if s.w.beforeDispatch != nil {
		s.w.beforeDispatch(s)
	}
	resp := s.serve()
	if s.dur != nil && s.dur.attempt > 1 && resp.Code == toolkit.CodeApprovalRequired && !s.toolRan() {
		// An approved call's approval is used by the delivery that runs
		// it: delivered again after that delivery's worker was lost, it
		// finds the approval used and does not run. That says nothing of
		// the lost delivery, which may have run. (Nor can this worker
		// tell a used approval from none given: a used one is gone.) A
		// tool that answered approval_required itself ran: its answer
		// is the call's.
		resp = s.approvalUsed()
	}
	if resp.Code != "" && s.toolRan() {
		// Its caller tells this final from one that ended the call
		// before its tool ran (Client.Call's notRun).
		if resp.Metadata == nil {
			resp.Metadata = map[string]any{}
		}
		resp.Metadata[wire.MetaToolRan] = true
	}
	s.markDrained(resp)
	if (s.removedMeanwhile(resp) && s.unserved()) || (s.skipped && s.notRunHere()) {
		if unkeep != nil {
			unkeep()
		}
		return
	}
	<-s.w.slots
	if s.pin.here {
		unkeep()
		s.pinned(resp)
	} else if s.pin.full {
		s.pinned(resp)
	}
	// A durable call's final is kept as it is sent (keepFinal), and the
	// bucket may store it after its caller has it; but the caller of one
	// that ended for an approval sends the call again at once, and reads
	// the kept final to tell that from a duplicate (approvalResend): it
	// is stored first.
	if s.keep && (s.dur == nil || s.dur.mayBeAgain(s.started) || awaitsApproval(resp) && !s.toolRan()) && !s.isDone() {
		s.keepBeforeFinal(resp)
	}
	if s.w.beforeFinal != nil {
		s.w.beforeFinal(s)
	}
	s.final(resp)
}

// approvalUsed is the final of a durable call delivered again that found
// no approval (runSlotted).
func (s *sender) approvalUsed() *toolkit.Response {
	return s.w.finalFor(s.id, toolkit.CodeWorkerLost, fmt.Sprintf(
		"WorkerLostError: an earlier delivery of '%s' lost its worker, and this one (delivery %d) found no approval for the call: if it was approved, the lost delivery used the approval and may or may not have taken effect, so the call is not run again. Send it again to have it approved anew.",
		s.call.Name, s.dur.attempt))
}

// keepBeforeFinal stores the final of a call that keeps it (s.keep)
// before the final is sent.
func (s *sender) keepBeforeFinal(resp *toolkit.Response) {
	// A core call that asked for it has its final stored before the
	// final is sent, so the caller that got it finds it kept. (A call
	// that ended meanwhile, abandoned, kept what it answered.) Not
	// over a later attempt's (keepLatest): nor a durable call's that
	// the queue may have delivered again meanwhile (its worker frozen
	// or cut off), whose later delivery's final is what its caller got.
	rev, ok := s.w.results.keepLatest(s.w.nc, s.keepKey, s.keepID, resp, &s.w.meta, s.w.log, &s.w.count.jsErrors, s.started, s.keptOf(s.toolRan()))
	s.mu.Lock()
	switch {
	case ok || s.dur == nil:
	case s.dur.last():
		// Left unacknowledged, its last delivery would run out and
		// end the call worker_lost, kept over the answer its caller
		// got. No later delivery can keep over this one's: the final
		// is written again once it is out, and the call acknowledged
		// once the bucket has it, or when that is given up
		// (keepThenAck).
		msg, err := s.w.results.keptFinalMsg(s.w.nc, s.keepKey, s.keepID, resp, &s.w.meta, s.keptOf(s.ran), s.w.log, &s.w.count.jsErrors)
		if err != nil {
			s.w.count.jsErrors.Add(1)
			s.w.log.Warn("bus: could not keep the result of a durable call's last delivery; acknowledging it, its answer sent", "call", s.id, "err", err)
		} else {
			s.w.log.Warn("bus: could not keep the result of a durable call's last delivery yet; writing it again after its answer", "call", s.id)
			s.dur.keep = msg
		}
	default:
		// Acknowledged, the call would end with nothing kept for a
		// caller that missed its final: it is delivered again.
		s.w.log.Warn("bus: leaving a durable call whose result could not be kept to be delivered again", "call", s.id)
		s.dur.unkept = true
	}
	if s.done && s.kept && rev > 0 {
		// Abandoned while the result was being stored: what the
		// caller got is what stays kept, over this write only.
		s.w.results.keep(s.w.nc, false, s.keepKey, s.keepID, s.abandoned(), &s.w.meta, s.w.log, &s.w.count.jsErrors, &rev, s.keptOf(s.ran))
	}
	s.kept = true
	s.mu.Unlock()
}

// keptOf is what the call's kept final carries beside it: its attempt;
// its caller's reply subject, which tells its caller that final from one
// another call under the same id kept (subjects.md: Kept results); and
// ran, s.ran as its caller read it (under mu, or toolRan).
func (s *sender) keptOf(ran bool) keptOf {
	return keptOf{attempt: s.attempt, reply: s.reply, ran: ran}
}

// removedMeanwhile reports whether resp is the toolkit's answer to a
// call of a tool it no longer has, removed after runSlotted found it
// served: nothing ran, and the call goes where one of a tool removed
// earlier goes (unserved).
func (s *sender) removedMeanwhile(resp *toolkit.Response) bool {
	if resp.Code != toolkit.CodeNotFound {
		return false
	}
	if _, served := s.w.tk.Get(s.call.Name); served {
		return false
	}
	s.mu.Lock()
	streamed := s.chunks > 0 || s.streaming
	s.mu.Unlock()
	return !streamed && resp.Text() == toolkit.NotFound(s.call.Name).Message
}

func (s *sender) isDone() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}

// silenceLocked ends the call here without a final: another worker, or
// another delivery, answers it. s.mu is held.
func (s *sender) silenceLocked() {
	s.done = true
	if s.span != nil {
		s.span.End()
	}
	s.untrack()
	s.dropHold()
}

// untrack takes the call out of the worker's running calls, unless its
// id is a new call's since (one that reused it, or this call passed on
// and back).
func (s *sender) untrack() {
	s.w.mu.Lock()
	if s.w.calls[s.key] == s {
		delete(s.w.calls, s.key)
	}
	if s.probeTok != "" {
		delete(s.w.probes, s.probeTok)
	}
	s.w.mu.Unlock()
}

// pinned tells the caller where its session is pinned and, when the call
// moved it, that state kept by the worker before may be gone: in the
// final's metadata and as a last line of its content (a last chunk, when
// the content was streamed).
func (s *sender) pinned(resp *toolkit.Response) {
	if !s.pin.moved() && s.codec != wire.JSON && !s.keep {
		return // msgpack finals get it in encode, without a map
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]any{}
	}
	if !s.pin.full { // not pinned: a Go client need not send its session's calls here
		resp.Metadata[wire.MetaSessionWorker] = s.w.opts.Instance
	}
	if !s.pin.moved() {
		return
	}
	if s.pin.movedFrom != "" {
		resp.Metadata[wire.MetaSessionMovedFrom] = s.pin.movedFrom
	}
	lacking := ""
	if s.pin.lacked {
		lacking = s.call.Name
	}
	note := movedText(s.pin.movedFrom, s.w.opts.Instance, s.pin.full, lacking)
	resp.Content = append(resp.Content, toolkit.Block{Type: toolkit.BlockText, Text: note})
	// Whether the final carries its content is known only as it goes
	// out: a timed flush may stream what the tool wrote before then.
	s.mu.Lock()
	s.movedNote = note
	s.mu.Unlock()
}

// serve runs the call through the toolkit. A panic that escapes it (the
// toolkit recovers its own) becomes an internal final instead of killing
// the worker, and an exception event on the call's span, as the toolkit
// records one it recovers.
func (s *sender) serve() (resp *toolkit.Response) {
	defer func() {
		if v := recover(); v != nil {
			p, stack := toolkit.PanicText(v), debug.Stack()
			if s.span != nil {
				callspan.Exception(s.span, v, p, stack)
			}
			s.w.log.Error("bus: serving a call panicked", "tool", s.call.Name, "call", s.id, "panic", p, "stack", string(stack))
			resp = &toolkit.Response{ID: s.id, State: toolkit.StateError, Code: toolkit.CodeInternal,
				Content: []toolkit.Block{{Type: toolkit.BlockText, Text: fmt.Sprintf("InternalError: the call to '%s' failed unexpectedly (panic: %s).", s.call.Name, p)}}}
		}
	}()
	resp = s.w.tk.Dispatch(s.ctx, s.call, s)
	dropWorkerKeys(resp.Metadata)
	if resp.Code == toolkit.CodeWorkerLost {
		// Only the bus says a worker went silent with a call: its
		// caller sends a read-only or idempotent call again, and takes
		// it for an attempt that may have run. A tool or middleware
		// that ends its call so (say, passing on another call's
		// answer) failed itself: its message and metadata go out as
		// tool_error's, as a code outside the set does.
		resp.Code = toolkit.CodeToolError
	}
	return resp
}

// dropWorkerKeys deletes from meta, what a tool or its middleware wrote
// (a final's or a chunk's metadata, the sender's own copy), the keys only
// the worker sets: wire.MetaDrained (its stop cut the call: the client
// sends a read-only or idempotent call again), wire.MetaToolRan (the
// tool was entered), wire.MetaSessionWorker and wire.MetaSessionMovedFrom
// (where the session's stateful tools run, and that they moved). A tool
// that wrote them would claim a stop that did not happen, and be run
// again, or a run that did not happen, or pin its session, for its
// caller, to a worker of its choosing.
func dropWorkerKeys(meta map[string]any) {
	if len(meta) == 0 {
		return
	}
	delete(meta, wire.MetaDrained)
	delete(meta, wire.MetaToolRan)
	delete(meta, wire.MetaSessionWorker)
	delete(meta, wire.MetaSessionMovedFrom)
}

// Refused implements toolkit.RefusalWriter: the toolkit refused the call
// (unknown tool, inactive group, bad input). Reported with its final
// (final), not when the call is passed on instead (removedMeanwhile);
// now when it was answered already (abandoned while the toolkit looked
// at it), unless it was handed back to the queue.
func (s *sender) Refused(r *toolkit.Response) {
	s.mu.Lock()
	s.unrun = true
	answered := s.done && (s.dur == nil || !s.dur.handed)
	s.mu.Unlock()
	if answered {
		s.w.tk.Refused(s.ctx, s.call, r)
	}
}

// ToolNotRun implements toolkit.NotRunWriter: the call's context ended
// before its tool was entered (runSlotted).
func (s *sender) ToolNotRun() { s.skipped = true }

// ToolRan implements toolkit.RanWriter: the call's tool was entered, and
// the call did not succeed. Under mu: a final abandoned meanwhile is
// kept with it (keepFinal).
func (s *sender) ToolRan() {
	s.mu.Lock()
	s.ran = true
	s.mu.Unlock()
}

// toolRan reports s.ran.
func (s *sender) toolRan() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ran
}

// Write implements toolkit.Writer.
func (s *sender) Write(c toolkit.Chunk) error { return s.write(c, false) }

// WriteResult implements toolkit.ResultWriter: a function tool's result.
func (s *sender) WriteResult(c toolkit.Chunk) error { return s.write(c, true) }

// write holds a chunk until the next flush. A written chunk is copied
// (the tool may reuse its slices once Write returns; its blocks go into
// one buffer for all held chunks, strings need no copy) and its flush is
// scheduled. A function tool's result is the tool's own and its last: it
// is held as it is and, while nothing was streamed, no flush is scheduled
// for it: the final carries it, unless something else makes the call
// stream first, and then it goes out first, in order.
func (s *sender) write(c toolkit.Chunk, result bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return toolkit.ErrStopped
	}
	if s.sendErr != nil {
		return s.sendErr
	}
	if s.hb == nil {
		s.hb = holdPool.Get().(*holdBufs)
	}
	if !result {
		hb := s.hb
		start := len(hb.blocks)
		hb.blocks = append(hb.blocks, c.Content...)
		c.Content = hb.blocks[start:len(hb.blocks):len(hb.blocks)]
	}
	c.Metadata = maps.Clone(c.Metadata)
	dropWorkerKeys(c.Metadata)
	if c.State != "" && !c.State.Valid() {
		// Not one of the states the wire carries (a frame with it is
		// dropped unread), and one that says nothing to the result
		// (toolkit.MergeState): the chunk goes without it.
		c.State = ""
	}
	s.hold(item{chunk: c, isChunk: true}, c.Size(), !result || s.streaming)
	return s.sendErr
}

// ContentDelivered implements toolkit.Delivered: once chunks were
// streamed, the final frame carries no content (the caller accumulates
// the chunks), so the toolkit need not build it; a kept result needs it,
// and so does the final of a call a stop cut before any of its chunks
// went out (cutUnheard).
func (s *sender) ContentDelivered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streaming && !s.cutUnheard() && !s.keep && s.sendErr == nil
}

// cutUnheard reports (s.mu held) whether the call's worker's stop cut it
// (cause toolkit.ErrDraining) before any of its chunks went out; progress
// or log frames may have. Its final then carries its whole content, the
// stop's notice included (ContentDelivered, finalLocked, abandon), as a
// fast call's does, rather than the notice going out as a chunk its
// caller would take for output heard: a read-only or idempotent call is
// sent again (Client.Call) whatever progress it reported. Other calls
// that streamed anything keep sending what is held (their last progress
// reports are not dropped, as a fast call's are).
func (s *sender) cutUnheard() bool {
	return s.chunks == 0 && errors.Is(context.Cause(s.ctx), toolkit.ErrDraining)
}

// Progress implements toolkit.Writer.
func (s *sender) Progress(p toolkit.Progress) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return toolkit.ErrStopped
	}
	s.hold(item{progress: p}, len(p.Message), true)
	return nil
}

// Log implements toolkit.LogWriter: what is held goes out first, then the
// log frame at once (a log message is never folded into a fast call's
// final, as held progress is).
func (s *sender) Log(m toolkit.LogMessage) error {
	if !slices.Contains(toolkit.LogLevels, m.Level) {
		return fmt.Errorf("bus: log level %q: want one of %v", m.Level, toolkit.LogLevels)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return toolkit.ErrStopped
	}
	// A tool logging in a loop would flood its caller (logs are never
	// batched): past maxLogsPerCall they are dropped, with one warning.
	if s.logs++; s.logs > maxLogsPerCall {
		if s.logs == maxLogsPerCall+1 {
			s.w.log.Warn("bus: a tool sent more log messages than a call may; dropping the rest", "tool", s.call.Name, "call", s.id, "max", maxLogsPerCall)
		}
		return nil
	}
	if s.holding() {
		s.flush()
	}
	err := s.publish(&wire.Frame{Kind: wire.KindLog, Log: &m})
	if errors.Is(err, errTooLarge) {
		cut := m
		cut.Data = fmt.Sprintf("(a log message of the tool too large to send: over the server's max_payload of %d bytes)", s.w.nc.MaxPayload())
		err = s.publish(&wire.Frame{Kind: wire.KindLog, Log: &cut})
	}
	if err != nil {
		s.w.log.Warn("bus: a log message could not be sent", "call", s.id, "err", err)
	}
	return nil
}

// hold keeps an item (size its content bytes) until the next flush;
// schedule makes that flush come FlushDelay after the first scheduled
// item at the latest, and past holdLimit it comes at once.
func (s *sender) hold(it item, size int, schedule bool) {
	if s.hb == nil {
		s.hb = holdPool.Get().(*holdBufs)
	}
	s.hb.held = append(s.hb.held, it)
	if schedule && !s.flushSet {
		s.flushSet = true
		s.holdGen++
		s.w.clock.flushAt(s, s.holdGen, time.Now().Add(s.w.opts.FlushDelay))
	}
	if s.heldSize += max(size, minHeldSize); s.heldSize > holdLimit {
		s.flush()
	}
}

// flushDue is the clock's flush of the hold gen, unless it went out
// already.
func (s *sender) flushDue(gen uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done && s.holdGen == gen && s.holding() {
		s.flush()
	}
}

// check is the clock's look at a running call: a heartbeat after silence,
// and the abandon of a tool that ignores its ended context.
func (s *sender) check(now time.Time) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	if s.ctx.Err() != nil {
		if s.abandonAt.IsZero() {
			s.abandonAt = now.Add(s.w.opts.AbandonAfter)
		} else if !now.Before(s.abandonAt) {
			s.w.finishing.Add(1) // until released, as in final
			s.abandon()
			s.mu.Unlock()
			s.release()
			s.w.finishing.Add(-1)
			return
		}
	}
	// A scheduled flush is a sign of life within FlushDelay; a result held
	// for the final has none coming, and a heartbeat (no content) may go
	// before it.
	if s.probeDue(now) {
		s.probe(now) // a heartbeat too
	} else if !s.flushSet && now.Sub(s.lastPub) >= s.hbEvery {
		s.publish(&wire.Frame{Kind: wire.KindHeartbeat})
	}
	if s.dur != nil && now.Sub(s.lastAlive) >= s.dur.redeliver/3 {
		s.dur.alive() // or JetStream delivers the call again
		s.lastAlive = now
	}
	s.mu.Unlock()
}

// abandon answers for a tool that ignores its ended context. s.mu is
// held; the caller releases the call.
func (s *sender) abandon() {
	s.w.log.Warn("bus: tool ignored its cancelled context; sending the final without it",
		"tool", s.call.Name, "call", s.id, "after", s.w.opts.AbandonAfter)
	if s.handBackLocked() {
		return // another worker runs it, as if the tool had returned
	}
	s.flush() // what the tool wrote first, held or not
	resp := s.abandoned()
	s.markDrained(resp)
	if !s.cutUnheard() {
		// Streaming now: the final carries no content, the caller
		// accumulates the chunks, this notice included; a kept final
		// carries the notice. (Cut by the stop before any of its output
		// went out, the final carries the notice: finalLocked.)
		s.sendChunk(&toolkit.Chunk{Content: resp.Content, State: resp.State})
	}
	s.finalLocked(resp)
}

// abandoned is the final of a call whose tool ignored its ended context.
func (s *sender) abandoned() *toolkit.Response {
	e := toolkit.ContextError(s.ctx)
	return &toolkit.Response{ID: s.id, State: e.Code.State(), Code: e.Code,
		Content: []toolkit.Block{{Type: toolkit.BlockText, Text: e.Message}}}
}

// markDrained marks resp, the call's final, as one its worker's stop
// ended (wire.MetaDrained: not its caller's cancel) when it is
// interrupted and the stop cancelled the call.
func (s *sender) markDrained(resp *toolkit.Response) {
	if resp.Code != toolkit.CodeInterrupted || !errors.Is(context.Cause(s.ctx), toolkit.ErrDraining) {
		return
	}
	if resp.Metadata == nil {
		resp.Metadata = map[string]any{}
	}
	resp.Metadata[wire.MetaDrained] = true
}

// release frees what the call held once its final is out.
func (s *sender) release() {
	if s.dur != nil && s.dur.keep != nil && !s.dur.handed {
		s.w.keepThenAck(s.dur, false)
	} else {
		s.dur.done()
	}
	s.w.inputs.release(s.mem)
	if s.stopT != nil {
		s.stopT()
	}
	s.cancel(nil)
}

// batchLimit is the most content one frame of several chunks carries.
const batchLimit = 64 << 10

// flush publishes the held items and marks the call as streaming. Chunks
// held one after the other travel together, in as few frames as
// batchLimit allows: one message to route and deliver instead of one
// per chunk.
func (s *sender) flush() {
	s.streaming = true
	if s.hb == nil {
		return
	}
	held := s.hb.held
	for i := 0; i < len(held); {
		if !held[i].isChunk {
			s.sendProgress(&held[i].progress)
			i++
			continue
		}
		j, size := i+1, held[i].chunk.Size()
		for j < len(held) && held[j].isChunk {
			n := held[j].chunk.Size()
			if size+n > batchLimit {
				break
			}
			size += n
			j++
		}
		s.sendBatch(held[i:j])
		i = j
	}
	s.hb.reset()
	s.heldSize, s.flushSet = 0, false
}

// sendBatch publishes held chunks in one frame; one by one when the
// caller does not read such frames or they do not fit in one message.
func (s *sender) sendBatch(items []item) {
	if len(items) > 1 && s.batch && s.sendErr == nil {
		more := s.hb.more[:0]
		for i := range items[1:] {
			more = append(more, items[1+i].chunk)
		}
		s.hb.more = more
		err := s.publishChunks(&items[0].chunk, more)
		clear(more)
		if err == nil {
			for i := range items {
				s.sent(&items[i].chunk)
			}
			return
		}
		// Too large, or one chunk cannot be encoded: one by one, so
		// that each fits or fails alone.
	}
	for i := range items {
		s.sendChunk(&items[i].chunk)
	}
}

// TruncatedMark ends the Message of a progress report that was cut to
// fit the server's max_payload.
const TruncatedMark = "… [truncated]"

// maxCutMessage is how much of such a Message is kept, in bytes.
const maxCutMessage = 1024

// sendProgress publishes a progress report. One over max_payload goes out
// with its Message cut to maxCutMessage bytes and TruncatedMark; one that
// still cannot be sent is logged and dropped (progress is never part of
// the result).
func (s *sender) sendProgress(p *toolkit.Progress) {
	err := s.publish(&wire.Frame{Kind: wire.KindProgress, Progress: p})
	if errors.Is(err, errTooLarge) && len(p.Message) > maxCutMessage {
		q := *p
		q.Message = cutUTF8(p.Message, maxCutMessage) + TruncatedMark
		err = s.publish(&wire.Frame{Kind: wire.KindProgress, Progress: &q})
	}
	if err != nil {
		s.w.log.Warn("bus: a progress report could not be sent", "call", s.id, "err", err)
	}
}

// cutUTF8 returns at most n bytes of s, cut at a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// holdBufs are the items a call holds back and a copy of their blocks,
// reused across calls.
type holdBufs struct {
	held   []item
	blocks []toolkit.Block
	more   []toolkit.Chunk // a batch's chunks after its first, while it is sent
}

var holdPool = sync.Pool{New: func() any { return new(holdBufs) }}

func (hb *holdBufs) reset() {
	clear(hb.held)
	clear(hb.blocks)
	hb.held, hb.blocks = hb.held[:0], hb.blocks[:0]
}

func (s *sender) holding() bool { return s.hb != nil && len(s.hb.held) > 0 }

// dropHold returns the hold buffers once the final is out (done is set,
// so nothing holds again).
func (s *sender) dropHold() {
	if s.hb != nil {
		s.hb.reset()
		if cap(s.hb.held) <= 1024 && cap(s.hb.blocks) <= 4096 && cap(s.hb.more) <= 1024 {
			holdPool.Put(s.hb)
		}
		s.hb = nil
	}
}

// sendChunk publishes a chunk, splitting it across frames when it does not
// fit in the server's max_payload.
func (s *sender) sendChunk(c *toolkit.Chunk) {
	err := errTooLarge
	if int64(c.Size()) <= s.w.nc.MaxPayload() {
		// Only a chunk that may fit is encoded: one of many times
		// max_payload would be encoded whole, then each half, and so on
		// (its size again at every halving) before any piece went out.
		err = s.publishChunks(c, nil)
	}
	if err == nil {
		s.sent(c)
		return
	}
	if !errors.Is(err, errTooLarge) {
		s.fail(err)
		return
	}
	s.sendSplit(c)
}

// sendSplit sends a chunk too large for one message in two halves, each
// split again while it is.
func (s *sender) sendSplit(c *toolkit.Chunk) {
	a, b, ok := s.split(c)
	if !ok {
		s.fail(fmt.Errorf("a chunk of %d bytes cannot be split to fit the server's max_payload of %d bytes", c.Size(), s.w.nc.MaxPayload()))
		return
	}
	s.sendChunk(a)
	s.sendChunk(b)
}

// publishChunks publishes a chunk frame: c, and the chunks in more after
// it. Not inlined: see run.
//
//go:noinline
func (s *sender) publishChunks(c *toolkit.Chunk, more []toolkit.Chunk) error {
	return s.publish(&wire.Frame{Kind: wire.KindChunk, Chunk: c, More: more})
}

// sent counts a chunk that went out and notes its metadata.
func (s *sender) sent(c *toolkit.Chunk) {
	s.chunks++
	if len(c.Metadata) > 0 {
		s.sentMetadata(c.Metadata)
	}
}

// sentMetadata notes a sent chunk's metadata. Not inlined: see run.
//
//go:noinline
func (s *sender) sentMetadata(meta map[string]any) {
	if s.sentMeta == nil {
		s.sentMeta = make(map[string]any, len(meta))
	}
	maps.Copy(s.sentMeta, meta)
}

func (s *sender) fail(err error) {
	if s.sendErr == nil {
		s.sendErr = err
		s.w.log.Error("bus: a chunk could not be sent", "call", s.id, "err", err)
	}
}

// final publishes the final frame, unless the call was abandoned.
func (s *sender) final(resp *toolkit.Response) {
	// Counted in finishing until the call is released: Stop waits for
	// the final and, for a durable call, for what ends it in the stream
	// (its acknowledgement once its final is kept, keepThenAck, which
	// needs the answers' subscription Stop ends last).
	s.w.finishing.Add(1)
	defer s.w.finishing.Add(-1)
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return
	}
	if !s.handBackLocked() {
		s.finalLocked(resp)
	}
	s.mu.Unlock()
	if s.w.beforeRelease != nil {
		s.w.beforeRelease(s)
	}
	s.release()
}

// handBackLocked hands a durable call that a stopping worker interrupted
// back to the queue when it may run again (also when its tool ignores
// that and is abandoned): another worker delivers its result. It reports
// whether it did; s.mu is held.
func (s *sender) handBackLocked() bool {
	if s.dur == nil || !errors.Is(context.Cause(s.ctx), toolkit.ErrDraining) || !s.repeatable() {
		return false
	}
	s.silenceLocked()
	s.dur.handBack()
	return true
}

// repeatable reports whether the call's tool may run again.
func (s *sender) repeatable() bool {
	t, ok := s.w.tk.Get(s.call.Name)
	if !ok {
		return s.dur != nil && s.dur.repeatable
	}
	return t.ReadOnly() || t.Idempotency().Retryable()
}

// refuse marks the call answered without running (refused), under s.mu:
// the clock may end a call meanwhile (finalLocked reads it).
func (s *sender) refuse() {
	s.mu.Lock()
	s.refused = true
	s.mu.Unlock()
}

// finalLocked publishes the final frame: with the whole content when
// nothing was streamed (a fast call sends only this message), without
// content otherwise.
func (s *sender) finalLocked(resp *toolkit.Response) {
	s.done = true
	s.ending = resp
	defer s.noteEnding() // no final frame could be encoded at all
	if s.keep && !s.kept {
		s.keepFinal(resp)
	}
	// The id is free before the caller can see the final, so the same call
	// sent again at once is a new call, not "already running"; Stop waits
	// for the final through finishing, which the callers of finalLocked
	// count until they release the call (final).
	s.untrack()
	defer s.dropHold()
	if s.codec == wire.JSON { // msgpack finals get it in publish, without a map
		if resp.Metadata == nil {
			resp.Metadata = map[string]any{}
		}
		resp.Metadata[wire.MetaWorker] = s.w.opts.Instance
	}
	// A final built without its content (ContentDelivered, asked before
	// a stop cut the call) goes out streamed all the same.
	if s.sendErr == nil && (!s.streaming || s.cutUnheard() && len(resp.Content) > 0) {
		if s.publishFinal(resp, false) == nil {
			return
		}
		// Too big for one message, or some of it cannot be encoded:
		// streamed instead, where each held chunk fits or fails alone.
	}
	if s.sendErr == nil {
		s.flush() // what is still held goes out before the final
		if s.movedNote != "" {
			// The final's content stays behind: its caller gets the
			// note as a last chunk (pinned).
			s.sendChunk(&toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: s.movedNote}}})
		}
	}
	if s.sendErr != nil {
		s.internalFinal("InternalError: part of the tool's output could not be delivered: " + s.sendErr.Error())
		return
	}
	if err := s.publishFinal(resp, true); err != nil {
		s.finalUnsent(err)
	}
}

// finalUnsent ends a call whose final frame could not be published.
func (s *sender) finalUnsent(err error) {
	s.w.log.Error("bus: publishing a final frame", "call", s.id, "err", err)
	s.internalFinal("InternalError: the tool's final response could not be encoded: " + err.Error())
}

// jsonHeaderSize is the size of the header a JSON reply carries (the
// codec's), once: iterating the header in publishTo would put a map
// iterator on the stack under every final's publish (see sender.run).
var jsonHeaderSize = headerSize(wire.JSON.Header())

// noteEnding reports the final to report (ending), once.
func (s *sender) noteEnding() {
	if r := s.ending; r != nil {
		s.ending = nil
		s.noteEnd(r)
	}
}

// noteEnd counts and reports the end of the call resp answers: its
// tool's run times and numbers, the worker's count of cancelled calls,
// OnFinal, OnRefused, its span.
func (s *sender) noteEnd(resp *toolkit.Response) {
	var took time.Duration // 0 for a call that did not run (OnFinal)
	if !s.refused {
		took = time.Since(s.started)
	}
	if s.tool != nil {
		if !s.refused {
			s.tool.pace.record(took)
		}
		s.tool.ep.record(resp, took)
	}
	if s.ctx.Err() != nil && !s.refused {
		// Ended by its caller's cancel or a deadline (the worker's own
		// timer, or the caller's cancel for it, whichever came first); not
		// by a stop.
		if c := context.Cause(s.ctx); c == toolkit.ErrCallerCancelled || errors.Is(c, context.DeadlineExceeded) {
			s.w.count.cancelled.Add(1)
		}
	}
	if h := s.w.opts.OnFinal; h != nil {
		ran := took
		if s.unrun {
			ran = 0 // refused by the toolkit (its input, its group): it did not run
		}
		h(s.call.Name, resp.State, resp.Code, ran)
	}
	if s.refused || s.unrun {
		s.w.tk.Refused(s.ctx, s.call, resp) // not dispatched, or refused by the toolkit
	}
	if s.span != nil {
		endCallSpan(s.span, resp)
	}
}

// keepFinal stores the final the call answers in the results bucket
// (finalLocked): a core call's before it is published, a durable call's
// after, the call acknowledged once the bucket has it (keepThenAck).
func (s *sender) keepFinal(resp *toolkit.Response) {
	// Exactly the final this call answers, and only it (a call handed
	// back answers nothing here).
	s.kept = true
	if s.dur != nil {
		// Written once the final is out; the call is acknowledged once
		// the bucket has it (release, keepThenAck).
		msg, err := s.w.results.keptFinalMsg(s.w.nc, s.keepKey, s.keepID, resp, &s.w.meta, s.keptOf(s.ran), s.w.log, &s.w.count.jsErrors)
		if err != nil {
			s.w.count.jsErrors.Add(1)
			s.w.log.Warn("bus: could not keep a call's result", "call", s.keepID, "err", err)
			return
		}
		s.dur.keep = msg
		return
	}
	// A core call's, not over a later attempt's: read first, so not here
	// under s.mu; Stop waits for it through finishing. A copy: the
	// final's metadata gains the worker in finalLocked.
	kept := *resp
	kept.Metadata = maps.Clone(resp.Metadata)
	of := s.keptOf(s.ran)
	s.w.finishing.Add(1)
	go func() {
		defer s.w.finishing.Add(-1)
		s.w.results.keepLatest(s.w.nc, s.keepKey, s.keepID, &kept, &s.w.meta, s.w.log, &s.w.count.jsErrors, s.started, of)
	}()
}

// publishFinal publishes the call's final frame: resp whole, or after
// the chunks streamed (streamed) without its content and with the
// metadata those chunks did not carry. Not inlined: see run.
//
//go:noinline
func (s *sender) publishFinal(resp *toolkit.Response, streamed bool) error {
	if !streamed {
		return s.publish(&wire.Frame{Kind: wire.KindFinal, Final: resp})
	}
	r := *resp
	r.Content = nil
	r.Metadata = s.unsent(resp.Metadata)
	return s.publish(&wire.Frame{Kind: wire.KindFinal, Final: &r, Chunks: s.chunks})
}

// unsent is the final's metadata without the entries the sent chunks
// carried already with the same value: the caller merges the chunks'
// metadata with the final's, so a content-less final need not repeat
// (and cannot be pushed over max_payload by) what was streamed.
func (s *sender) unsent(meta map[string]any) map[string]any {
	if len(s.sentMeta) == 0 || len(meta) == 0 {
		return meta
	}
	var out map[string]any
	for k, v := range meta {
		if sv, ok := s.sentMeta[k]; ok && k != wire.MetaWorker && reflect.DeepEqual(sv, v) {
			continue
		}
		if out == nil {
			out = make(map[string]any, len(meta))
		}
		out[k] = v
	}
	return out
}

// internalFinal ends the call with code internal when its output or its
// final could not be sent, with a final that always encodes: no metadata
// but the worker's. When chunks went out already, the message goes as one
// more chunk and the final carries the real chunk count and no content, so
// the caller keeps the partial output it has.
func (s *sender) internalFinal(msg string) {
	if len(msg) > maxCutMessage {
		msg = cutUTF8(msg, maxCutMessage) + "…"
	}
	msg = strings.ToValidUTF8(msg, "?")
	resp := &toolkit.Response{ID: s.id, State: toolkit.StateError, Code: toolkit.CodeInternal}
	if s.codec == wire.JSON { // msgpack finals get it in publish
		resp.Metadata = map[string]any{wire.MetaWorker: s.w.opts.Instance}
	}
	text := []toolkit.Block{{Type: toolkit.BlockText, Text: msg}}
	if s.ending != nil { // the final the caller gets is this one
		s.ending = &toolkit.Response{ID: s.id, State: toolkit.StateError, Code: toolkit.CodeInternal, Content: text}
	}
	if s.chunks > 0 {
		c := toolkit.Chunk{Content: text, State: toolkit.StateError}
		if s.publish(&wire.Frame{Kind: wire.KindChunk, Chunk: &c}) == nil {
			s.chunks++
		}
	} else {
		resp.Content = text
	}
	if err := s.publish(&wire.Frame{Kind: wire.KindFinal, Final: resp, Chunks: s.chunks}); err != nil {
		s.w.log.Error("bus: publishing an internal final frame", "call", s.id, "err", err)
	}
}

var errTooLarge = errors.New("frame over max_payload")

// publish numbers, encodes and publishes one frame.
func (s *sender) publish(f *wire.Frame) error { return s.publishTo(f, "") }

// publishTo is publish, the message's reply subject probe ("" for none:
// see callerGone).
func (s *sender) publishTo(f *wire.Frame, probe string) error {
	f.ID = s.id
	f.Seq = s.seq + 1
	s.dur.mark(f)
	eb := getBuf()
	defer putBuf(eb)
	data, err := s.encode(f, eb)
	if err == nil && f.Kind == wire.KindFinal && s.ending != nil {
		size := len(data)
		if s.codec == wire.JSON { // the server counts a JSON reply's header too
			size += jsonHeaderSize
		}
		if int64(size) > s.w.nc.MaxPayload() {
			return errTooLarge // not this final: the caller gets another
		}
		s.noteEnding()
	}
	if err == nil {
		// nats.go checks the size against the server's max_payload
		// (headers included) under the lock it publishes with anyway.
		if err = s.w.publishProbe(s.reply, probe, s.codec, f.Kind, data); errors.Is(err, nats.ErrMaxPayload) {
			return errTooLarge
		}
	}
	if err != nil {
		return fmt.Errorf("publishing a %s frame: %w", f.Kind, err)
	}
	s.seq = f.Last()
	if f.Kind != wire.KindFinal { // nothing is sent after a final: no heartbeat to time
		s.lastPub = time.Now()
	}
	return nil
}

// encode encodes a frame (msgpack into eb). A panic while encoding (a
// value whose marshaller panics) is an error, not the end of the worker.
func (s *sender) encode(f *wire.Frame, eb *encBuf) (data []byte, err error) {
	defer func() {
		if v := recover(); v != nil {
			data, err = nil, fmt.Errorf("encoding panicked: %s", toolkit.PanicText(v))
		}
	}()
	if s.codec == wire.JSON {
		return wire.JSON.Marshal(f)
	}
	var extra *wire.MetaEntry
	if f.Final != nil {
		extra = &s.w.meta
		if s.pin.here {
			extra = &s.w.pinMeta
		}
	}
	eb.b, err = wire.AppendFrame(eb.b[:0], f, extra)
	return eb.b, err
}

// split cuts a chunk into two whose content is about half each. Text is
// cut at a rune boundary and base64 data at a 4-character boundary, and
// the halves accumulate to what the whole would: text pieces are adjacent
// (so they merge) and data pieces share an id (one is generated when the
// block has none). Metadata goes with the first half, the state with both.
func (s *sender) split(c *toolkit.Chunk) (a, b *toolkit.Chunk, ok bool) {
	target := c.Size() / 2
	a = &toolkit.Chunk{State: c.State, Metadata: c.Metadata}
	b = &toolkit.Chunk{State: c.State}
	n := 0
	for i, blk := range c.Content {
		size := blk.Size()
		switch {
		case n+size <= target || (n == 0 && i == 0 && !cuttable(blk)):
			a.Content = append(a.Content, blk)
		case n >= target:
			b.Content = append(b.Content, blk)
		default:
			first, second, cut := s.cutBlock(blk, target-n)
			if !cut {
				b.Content = append(b.Content, blk)
				break
			}
			a.Content = append(a.Content, first)
			b.Content = append(b.Content, second)
		}
		n += size
	}
	if len(a.Content) == 0 || len(b.Content) == 0 {
		return nil, nil, false
	}
	return a, b, true
}

func cuttable(b toolkit.Block) bool {
	return (b.Type == toolkit.BlockText && len(b.Text) > 1) || (b.Type == toolkit.BlockData && b.URL == "" && len(b.Data) >= 8)
}

// cutBlock cuts one block so the first part holds about n bytes.
func (s *sender) cutBlock(blk toolkit.Block, n int) (first, second toolkit.Block, ok bool) {
	if !cuttable(blk) {
		return blk, blk, false
	}
	first, second = blk, blk
	switch blk.Type {
	case toolkit.BlockText:
		i := min(max(n, 1), len(blk.Text)-1)
		for i > 0 && !utf8.RuneStart(blk.Text[i]) {
			i--
		}
		if i == 0 {
			return blk, blk, false
		}
		first.Text, second.Text = blk.Text[:i], blk.Text[i:]
	case toolkit.BlockData:
		i := min(max(n/4*4, 4), (len(blk.Data)-1)/4*4)
		if i <= 0 {
			return blk, blk, false
		}
		if blk.ID == "" {
			s.parts++
			first.ID = fmt.Sprintf("%s-part-%d", s.id, s.parts)
			second.ID = first.ID
		}
		first.Data, second.Data = blk.Data[:i], blk.Data[i:]
	}
	return first, second, true
}

// encBuf is a pooled encoding buffer: frames and requests are encoded into
// one and published from it (nats.Conn.Publish copies the bytes).
type encBuf struct{ b []byte }

var bufPool = sync.Pool{New: func() any { return &encBuf{b: make([]byte, 0, 1024)} }}

func getBuf() *encBuf { return bufPool.Get().(*encBuf) }

// putBuf returns a buffer to the pool, unless it grew large.
func putBuf(e *encBuf) {
	if cap(e.b) <= 64<<10 {
		e.b = e.b[:0]
		bufPool.Put(e)
	}
}
