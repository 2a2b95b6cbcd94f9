package bus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/internal/loglimit"
	"github.com/toolbus/toolbus/toolkit"
)

// WorkerOptions configure a Worker. A nil *WorkerOptions means the
// defaults; so does every zero field.
type WorkerOptions struct {
	// Queue is the queue group of the call subscriptions: workers in the
	// same group share the load of each tool. Default DefaultQueue.
	Queue string
	// Instance identifies this worker on finals (metadata "worker"): a
	// token of [A-Za-z0-9_-] of at most toolkit.MaxNameLen bytes;
	// default a random id.
	Instance string
	// MaxInFlight bounds the calls running at once; a call beyond it
	// waits up to 10ms for one to end, then is answered with code
	// overloaded. Default 256; at most MaxMaxInFlight.
	MaxInFlight int
	// MaxInputMemory bounds the memory the decoded requests of the calls
	// a worker holds at once may take. Each call counts 16 times its body
	// (the most a body may decode to: wire.Budget) and twice its headers
	// (as received, and decoded) from before it is decoded, then what its
	// request holds decoded (about its body, its headers and its input
	// again; a raw_input the 16 times it may decode to) until its final
	// is sent. A request that would pass the bound waits until
	// calls end, on a goroutine of its own: the calls behind it, which
	// fit, are taken meanwhile; its caller hears heartbeats while it
	// waits, and its timeout counts from when it came. A single request
	// bigger than the bound is
	// taken alone. Default 16 MiB: several requests of the default
	// max_payload (1 MiB) running, one taken at a time; thousands of
	// small ones.
	MaxInputMemory int
	// RetryAfter is the hint sent with an overloaded answer. Default 100ms.
	RetryAfter time.Duration
	// FlushDelay is how long the first chunks of a call are held back: a
	// call that ends within it sends exactly one message, the final.
	// Held chunks go out at most 1ms after it (the worker's clock groups
	// flushes). Default 5ms.
	FlushDelay time.Duration
	// AbandonAfter bounds how long a tool may ignore its cancelled or
	// expired context: after it (and up to 10ms more: the worker's clock
	// looks every 5ms), the caller gets the final (interrupted or timeout)
	// while the tool's goroutine is left to finish on its own. Default 2s.
	AbandonAfter time.Duration
	// TombstoneTTL is how long a cancel for an unknown call id is kept, in
	// case it overtook its call. Default 30s.
	TombstoneTTL time.Duration
	// CallerGoneAfter is how long a running core call's caller may be gone
	// (nothing subscribes to the call's reply subject: its process or
	// connection ended without cancelling) before the call is cancelled
	// with toolkit.ErrCallerGone; at least three of the call's probe
	// intervals (its heartbeat interval, at least 1s). Calls that keep
	// their final and durable calls are left to run. Default 10s; negative
	// turns the probes off (calls of gone callers then run to their end).
	CallerGoneAfter time.Duration
	// Logger receives bad requests that cannot be answered and other
	// operator-facing events. Default slog.Default().
	Logger *slog.Logger
	// AnnounceInterval is the interval of the worker's announcements (a
	// discovery.Announcer): 0 means discovery.DefaultInterval, a negative
	// value turns announcing off (the worker then is invisible to fleets
	// and to Client.SessionSchemas).
	AnnounceInterval time.Duration
	// Version is announced as is.
	Version string
	// Durable turns the durable path on: the worker pulls its tools'
	// durable calls from the calls stream (see DurableOptions). Nil leaves
	// it off: such calls wait for a worker that has it.
	Durable *DurableOptions
	// Results turns kept results on: the finals of calls sent with
	// wire.HeaderKeepResult are stored for Client.Result (see
	// ResultsOptions). Nil leaves them off (such calls are answered as
	// usual, their results not kept), unless Durable is set: the durable
	// path always keeps its finals, then in a bucket with the defaults.
	Results *ResultsOptions
	// Sessions turns session affinity on: a session's calls of
	// session-bound tools (toolkit.SessionBound) run on one worker (see
	// SessionsOptions). Nil leaves it off: such calls run wherever the
	// queue group delivers them.
	Sessions *SessionsOptions
	// OnFinal, when set, is told of every final the worker sends: the
	// tool, how the call ended, and how long since the worker took it (0
	// for a call answered without running: a bad request, an unknown
	// tool, input that does not validate, an inactive group). It runs on
	// the call's goroutine and must not block;
	// metrics use it.
	OnFinal func(tool string, state toolkit.State, code toolkit.Code, took time.Duration)
	// Tracer, when set, records every call as a span (see trace.go), in
	// the trace of its request's traceparent header. Nil records
	// nothing, at no cost.
	Tracer trace.Tracer
	// Meta adds parts to the worker's announcements
	// (discovery.AnnouncerOptions.Meta): packages such as skill and
	// permission announce what they add to the worker this way.
	Meta map[string]func() any

	// inboxLen, when positive, replaces callQueue (tests).
	inboxLen int
}

// Defaults of WorkerOptions and ClientOptions.
const (
	DefaultQueue = "toolbus"
	// DefaultHeartbeat is part of the wire contract: the interval for
	// requests without wire.HeaderHeartbeat.
	DefaultHeartbeat = time.Second
	// MinHeartbeat and MaxHeartbeat bound the heartbeat a request may ask
	// for.
	MinHeartbeat = 20 * time.Millisecond
	MaxHeartbeat = time.Minute
)

// maxTombstones bounds the cancels kept for calls not yet arrived, and
// maxTombstonesPerCaller those of one caller identity (the anonymous
// callers are one): a caller may cancel ids of its own at will, and its
// flood must not push out the others' tombstones.
const (
	maxTombstones          = 100_000
	maxTombstonesPerCaller = maxTombstones / 10
)

func (o *WorkerOptions) withDefaults() WorkerOptions {
	var r WorkerOptions
	if o != nil {
		r = *o
	}
	if r.Queue == "" {
		r.Queue = DefaultQueue
	}
	if r.Instance == "" {
		r.Instance = nuid.Next()
	}
	if r.MaxInFlight <= 0 {
		r.MaxInFlight = 256
	}
	if r.MaxInputMemory <= 0 {
		r.MaxInputMemory = 16 << 20
	}
	if r.RetryAfter <= 0 {
		r.RetryAfter = 100 * time.Millisecond
	}
	if r.FlushDelay <= 0 {
		r.FlushDelay = 5 * time.Millisecond
	}
	if r.AbandonAfter <= 0 {
		r.AbandonAfter = 2 * time.Second
	}
	if r.TombstoneTTL <= 0 {
		r.TombstoneTTL = 30 * time.Second
	}
	if r.CallerGoneAfter == 0 {
		r.CallerGoneAfter = 10 * time.Second
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	return r
}

// Worker serves a Toolkit on NATS: it queue-subscribes
// wire.SubjectCallPrefix+name for every tool (and reset_tools when the toolkit
// has groups), follows the toolkit's changes live, runs each call under
// the in-flight limit (a quick tool's on the goroutine that receives
// calls, any other on a goroutine of its own: see readers.go), and
// streams the call's frames back on the request's reply subject. All
// methods are safe for concurrent use.
type Worker struct {
	nc   *nats.Conn
	tk   *toolkit.Toolkit
	opts WorkerOptions
	log  *slog.Logger
	// unanswered bounds the lines of requests that may not be answered
	// (answerable).
	unanswered loglimit.Limit

	mu       sync.Mutex
	subs     map[string][2]*nats.Subscription // tool name → its call subscriptions: anonymous, by identity
	listSubs [2]*nats.Subscription
	lists    *listQueue // list requests not yet answered (lists.go)

	beforeDispatch func(*sender)   // tests: after the check that the tool is served, before its dispatch
	afterAccept    func(*sender)   // tests: a core call registered, before its reader goes on with it
	beforeAccept   func(*nats.Msg) // tests: a core call taken from the inbox, before anything else
	onPassedBack   func()          // tests: a no-responders status of a call passed on, before it is answered
	beforeRelease  func(*sender)   // tests: a final sent, before what the call held is released
	beforeFinal    func(*sender)   // tests: a call's tool returned, its final about to be sent (runSlotted)
	afterDrains    func()          // tests: a stop's subscriptions drained (or ended, cut off), before it waits
	cancelSub      *nats.Subscription
	calls          map[string]*sender // call id → running call
	tombs          map[string]tombEntry
	tombQ          []tombstone
	tombsBy        map[string]int // identity → its entries in tombQ
	// tombsEvicted is when a live tombstone was last pushed out (a
	// flood): a durable call queued before looks its cancels up (unheard).
	tombsEvicted time.Time
	stopping     bool
	// stopped is closed when the first Stop returns, stopErr what it
	// returned: a later Stop waits for it.
	stopped chan struct{}
	stopErr error
	// interrupting: the grace period is over; calls still arriving are
	// answered interrupted at once.
	interrupting bool
	stopWatch    func()
	draining     []*nats.Subscription // call subscriptions of removed tools
	passed       passedCalls          // calls of removed tools passed on (unserved)
	keeps        keeps                // durable calls acknowledged once their finals are kept
	clock        *clock
	meta         wire.MetaEntry       // wire.MetaWorker and the instance, for finals
	pinMeta      wire.MetaEntry       // wire.MetaSessionWorker and the instance, then meta: for pinned calls' finals
	ann          *discovery.Announcer // nil when announcing is off
	fleet        fleetGroups          // reset_tools' view of the fleet's groups (fleet_groups.go)

	// Calls arrive on inbox, shared by the call subscriptions; readers
	// take them (readers.go).
	inbox     chan *nats.Msg
	rd        readers
	tools     atomic.Pointer[map[string]*toolState] // by name; replaced when the tools change
	started   time.Time
	svcSubs   []*nats.Subscription     // the services protocol's (service.go)
	answerSub *nats.Subscription       // callers' answers to tools' requests (ask.go)
	asks      map[string]chan answerOf // by token; guarded by mu
	probes    map[string]*sender       // calls probing their caller's inbox, by token (callerGone); guarded by mu
	count     counters
	drops     dropWatch     // what NATS dropped (dropped.go)
	mayHold   atomic.Int32  // readers waiting on inbox or registering a call they took
	slots     chan struct{} // one per call whose tool runs: MaxInFlight of them
	finishing atomic.Int32  // finals being published, and calls being passed on to their session's worker (both already out of calls)
	inputs    *memBudget    // what MaxInputMemory bounds
	// memWaiting counts the readers waiting for input memory (tests).
	memWaiting atomic.Int32
	// stopCutOff: the stop found the worker not connected to NATS and
	// ended its subscriptions without draining them (cutOff).
	stopCutOff atomic.Bool
	// stopDrained counts the calls the stop answered interrupted without
	// running them (drainedFinal).
	stopDrained atomic.Int32
	dur         *durablePath // nil without WorkerOptions.Durable
	results     *results     // nil without WorkerOptions.Results
	aff         *affinity    // nil without WorkerOptions.Sessions
	closeOnce   sync.Once
}

// idleReaders is how many readers wait to lead while no calls arrive.
const idleReaders = 4

// MaxMaxInFlight is the largest WorkerOptions.MaxInFlight: a million
// calls at once, each with its goroutine's stack, is more than one
// process holds; past it Serve refuses the options (a number near
// math.MaxInt made the readers' own bound wrap).
const MaxMaxInFlight = 1 << 20

// overloadReaders are the readers beyond MaxInFlight: with MaxInFlight
// calls running, they take the calls that still arrive and answer them
// overloaded at once.
const overloadReaders = 32

// callQueue bounds the calls that arrived and were not yet taken by a
// reader; NATS drops calls beyond it (their callers see worker_lost). A
// reader answers calls over MaxInFlight at once, so the queue only fills
// when the worker is starved of CPU.
const callQueue = 1 << 15

// tombEntry is a cancel that overtook its call: until when it is kept,
// whether it was the caller's deadline (the call then answers timeout,
// not interrupted), and the reply subject of the call it cancels ("":
// any call under its id; wire.HeaderReply on the cancel).
type tombEntry struct {
	exp      time.Time
	deadline bool
	reply    string
}

type tombstone struct {
	id       string
	identity string
	exp      time.Time
}

// announcedMeta is the worker's announcement meta: the caller's parts,
// and wire.MetaDurable when it runs the durable path (Client.unserved).
func announcedMeta(meta map[string]func() any, durable bool) map[string]func() any {
	if !durable {
		return meta
	}
	m := maps.Clone(meta)
	if m == nil {
		m = map[string]func() any{}
	}
	m[wire.MetaDurable] = func() any { return true }
	return m
}

// Serve starts serving tk on nc and returns the running Worker. Unless
// WorkerOptions.AnnounceInterval is negative it also announces tk (a
// discovery.Announcer with the worker's instance and queue group), so
// fleets and Client.SessionSchemas list its tools; Serve fails when that
// first announcement cannot be published. With the durable path it
// returns once its tools' consumers of the calls stream are bound, or
// after at most 5 s when JetStream is slow to bind them (it logs which):
// until then a durable call of such a tool may be answered not_found.
// The stream of exhausted calls' advisories and the cancels stream are
// bound in the background: Serve does not wait for them, nor for the 5 s
// a worker whose roles predate a stream waits before it goes on without
// it (hearing the advisories on core NATS instead, counting only the
// cancels it heard). A durable call queued before the worker heard
// cancels waits for the cancels stream's bind, to look its cancel up.
// The connection stays the caller's: Stop does not close it.
func Serve(nc *nats.Conn, tk *toolkit.Toolkit, opts *WorkerOptions) (*Worker, error) {
	if nc == nil || tk == nil {
		return nil, errors.New("bus: Serve needs a connection and a toolkit")
	}
	o := opts.withDefaults()
	if !toolkit.ValidName(o.Queue) {
		return nil, fmt.Errorf("bus: invalid queue group %q: must match [A-Za-z0-9_-]+", o.Queue)
	}
	if o.MaxInFlight > MaxMaxInFlight {
		return nil, fmt.Errorf("bus: MaxInFlight %d is more than a worker runs at once: at most %d", o.MaxInFlight, MaxMaxInFlight)
	}
	if !toolkit.ValidToolName(o.Instance) {
		// It names subjects (answers, pinned calls) and is announced; a
		// caller drops an ask naming a longer one (wire.ValidAnswerSubject).
		return nil, fmt.Errorf("bus: invalid instance id %s: must match [A-Za-z0-9_-]+, at most %d bytes", wire.Quote(o.Instance), toolkit.MaxNameLen)
	}
	w := &Worker{
		nc: nc, tk: tk, opts: o, log: o.Logger,
		subs:    map[string][2]*nats.Subscription{},
		calls:   map[string]*sender{},
		tombs:   map[string]tombEntry{},
		tombsBy: map[string]int{},
		meta:    wire.MetaEntry{Key: wire.MetaWorker, Value: o.Instance},
		inbox:   make(chan *nats.Msg, callQueue),
		rd:      readers{max: o.MaxInFlight + overloadReaders, alive: 1, baton: make(chan struct{})},
		lists:   newListQueue(),
	}
	if o.inboxLen > 0 {
		w.inbox = make(chan *nats.Msg, o.inboxLen)
	}
	w.pinMeta = wire.MetaEntry{Key: wire.MetaSessionWorker, Value: o.Instance, Next: &w.meta}
	w.fleet.nc, w.fleet.log = nc, o.Logger
	w.clock = newClock(w)
	go w.clock.run()
	w.inputs = newMemBudget(o.MaxInputMemory)
	w.slots = make(chan struct{}, o.MaxInFlight)
	go w.reader()
	var err error
	if o.Durable != nil || o.Results != nil || o.Sessions != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if o.Durable != nil {
			w.dur, err = startDurable(ctx, w, o.Durable)
		}
		ro := o.Results
		if ro == nil && o.Durable != nil {
			// The durable path keeps its finals (its callers read them
			// back when a frame is lost): the bucket's defaults.
			ro = &ResultsOptions{JetStream: o.Durable.JetStream, Replicas: o.Durable.Replicas}
		}
		if err == nil && ro != nil {
			w.results, err = openResults(ctx, ro)
		}
		if err == nil && w.dur != nil {
			w.dur.watchExhausted() // in the background
		}
		if err == nil && o.Sessions != nil {
			w.aff, err = startAffinity(ctx, w, o.Sessions)
		}
		cancel()
		if err != nil {
			w.abort()
			return nil, err
		}
	}
	if w.cancelSub, err = nc.Subscribe(wire.SubjectCancelPrefix+">", w.onCancel); err != nil {
		w.abort()
		return nil, fmt.Errorf("bus: subscribing to cancels: %w", err)
	}
	w.drops.watch(DroppedCancels, w.cancelSub)
	if w.dur != nil {
		w.dur.hearing(nc)
	}
	for i, subject := range [2]string{wire.SubjectList, wire.ListSubject("*")} {
		if w.listSubs[i], err = nc.QueueSubscribe(subject, o.Queue, w.onList); err != nil {
			w.unsubscribeAll()
			w.abort()
			return nil, fmt.Errorf("bus: subscribing to %s: %w", subject, err)
		}
		w.drops.watch(DroppedLists, w.listSubs[i])
	}
	if w.answerSub, err = nc.Subscribe(wire.AnswerSubject(o.Instance, "*"), w.onAnswer); err != nil {
		w.unsubscribeAll()
		w.abort()
		return nil, fmt.Errorf("bus: subscribing to answers: %w", err)
	}
	w.drops.watch(DroppedAnswers, w.answerSub)
	w.started = time.Now()
	for _, subject := range w.serviceSubjects() {
		sub, err := nc.Subscribe(subject, w.onService)
		if err != nil {
			w.unsubscribeAll()
			w.abort()
			return nil, fmt.Errorf("bus: subscribing to %s: %w", subject, err)
		}
		w.drops.watch(DroppedServices, sub)
		w.mu.Lock()
		w.svcSubs = append(w.svcSubs, sub)
		w.mu.Unlock()
	}
	// Watch first, then subscribe: a tool added in between is not missed.
	w.stopWatch = tk.OnChange(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if err := w.syncLocked(); err != nil {
			w.log.Error("bus: following toolkit changes", "err", err)
		}
	})
	w.mu.Lock()
	err = w.syncLocked()
	w.mu.Unlock()
	if err != nil {
		w.stopWatch()
		w.unsubscribeAll()
		w.abort()
		return nil, err
	}
	// The subscriptions are in place on the server once Flush returns, so
	// a caller that starts after Serve finds them.
	if err := nc.Flush(); err != nil {
		w.stopWatch()
		w.unsubscribeAll()
		w.abort()
		return nil, fmt.Errorf("bus: flushing subscriptions: %w", err)
	}
	if w.dur != nil {
		w.dur.waitBound(context.Background())
	}
	// Announce once the subscriptions are in place: a fleet that lists
	// the worker can call it.
	if o.AnnounceInterval >= 0 {
		w.ann, err = discovery.NewAnnouncer(nc, tk, &discovery.AnnouncerOptions{
			Instance: o.Instance, Version: o.Version, Queue: o.Queue, Interval: o.AnnounceInterval,
			Logger: o.Logger, Meta: announcedMeta(o.Meta, w.dur != nil),
		})
		if err != nil {
			w.stopWatch()
			w.unsubscribeAll()
			w.abort()
			return nil, err
		}
	}
	return w, nil
}

// Instance returns the worker's instance id.
func (w *Worker) Instance() string { return w.opts.Instance }

// Draining reports whether Stop was called: the worker takes no new calls.
func (w *Worker) Draining() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopping
}

// Queue returns the worker's queue group.
func (w *Worker) Queue() string { return w.opts.Queue }

// Subjects returns the call subjects the worker is subscribed to, sorted.
func (w *Worker) Subjects() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, 2*len(w.subs))
	for name := range w.subs {
		out = append(out, wire.CallSubject(name, ""), wire.CallSubject(name, "*"))
	}
	slices.Sort(out)
	return out
}

// InFlight reports the number of calls running now.
func (w *Worker) InFlight() int { return len(w.slots) }

// overloadWait is how long a call that finds MaxInFlight calls running
// waits for one to end before it is answered overloaded: a burst that
// outruns the worker by a moment (its calls' goroutines not yet scheduled
// again on a busy machine) is served, not refused.
const overloadWait = 10 * time.Millisecond

// takeSlot counts a call as running; false when MaxInFlight are, still
// after overloadWait.
func (w *Worker) takeSlot() bool {
	select {
	case w.slots <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(overloadWait)
	defer t.Stop()
	select {
	case w.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	}
}

// servedTools names the tools a worker of tk serves: its tools, and
// reset_tools when it has groups.
func servedTools(tk *toolkit.Toolkit) []string {
	tools := tk.Tools()
	names := make([]string, 0, len(tools)+1)
	for _, t := range tools {
		names = append(names, t.Name)
	}
	if len(tk.Groups()) > 0 {
		names = append(names, toolkit.MetaToolName)
	}
	return names
}

// syncLocked makes the call subscriptions match the toolkit. w.mu is held.
func (w *Worker) syncLocked() error {
	if w.stopping {
		return nil
	}
	want := map[string]bool{}
	served := servedTools(w.tk)
	for _, name := range served {
		want[name] = true
	}
	if w.dur != nil {
		w.dur.sync(served)
	}
	w.setTools(served)
	var errs []error
	for name, subs := range w.subs {
		if !want[name] {
			// Drain: calls already delivered to us are still taken, and
			// passed on to the queue group (unserved). Not while
			// reconnecting: nats.go would make the draining
			// subscriptions again on the server once the connection is
			// back and end them on its side only (cutOff), leaving this
			// worker in the tool's queue group, its calls dropped.
			// Ended at once instead; nothing is delivered meanwhile.
			w.draining = slices.DeleteFunc(w.draining, func(s *nats.Subscription) bool { return !s.IsValid() })
			connected := w.nc.IsConnected()
			for _, sub := range subs {
				if !connected {
					sub.Unsubscribe()
					continue
				}
				if err := sub.Drain(); err != nil {
					errs = append(errs, err)
				}
				w.draining = append(w.draining, sub)
			}
			delete(w.subs, name)
		}
	}
	for name := range want {
		if _, ok := w.subs[name]; ok {
			continue
		}
		var subs [2]*nats.Subscription
		var err error
		for i, subject := range [2]string{wire.CallSubject(name, ""), wire.CallSubject(name, "*")} {
			if subs[i], err = w.nc.ChanQueueSubscribe(subject, w.opts.Queue, w.inbox); err != nil {
				errs = append(errs, fmt.Errorf("bus: subscribing to %s: %w", subject, err))
				break
			}
			w.drops.watch(DroppedCalls, subs[i])
		}
		if err != nil {
			for _, sub := range subs {
				if sub != nil {
					sub.Unsubscribe()
				}
			}
			continue
		}
		w.subs[name] = subs
	}
	return errors.Join(errs...)
}

func (w *Worker) unsubscribeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, subs := range w.subs {
		for _, s := range subs {
			s.Unsubscribe()
		}
	}
	w.subs = map[string][2]*nats.Subscription{}
	for _, s := range w.listSubs {
		if s != nil {
			s.Unsubscribe()
		}
	}
	for _, s := range w.svcSubs {
		s.Unsubscribe()
	}
	if w.answerSub != nil {
		w.answerSub.Unsubscribe()
	}
	if w.cancelSub != nil {
		w.cancelSub.Unsubscribe()
	}
}

// incoming is a request as the worker received it, on the core path (a
// call subject) or the durable path (a message of the calls stream).
type incoming struct {
	subject  string
	tool     string
	identity string
	reply    string
	header   nats.Header
	data     []byte
	dur      *delivery // nil on the core path
	// mem is the input memory taken for a core call (Worker.inputs):
	// its sender has it from when it is registered, so that whoever
	// sends its final gives it back, even before its reader goes on.
	mem int
	// beats and received are set for a core call that waited for input
	// memory (waitForInput): the heartbeats its caller heard meanwhile,
	// which its frames are numbered after, and when it arrived, from
	// which its timeout is counted.
	beats    uint64
	received time.Time
}

// seqAfter is the sequence number the frames of in's call follow.
func (in *incoming) seqAfter() uint64 {
	return seqAfter(in.header) + in.beats
}

// badRequest answers a request that cannot run with a final error frame,
// or logs it when there is nowhere to answer; a durable one is settled.
// session is the call's, "" when its request could not be read.
func (w *Worker) badRequest(in *incoming, c wire.Codec, id, session string, code toolkit.Code, msg string) {
	if w.answerable(in, id, msg) {
		w.replyFinal(in, c, w.finalFor(id, code, msg), session)
	}
	w.settle(in.dur)
}

// answerable reports whether the request in may be answered: it names a
// reply subject, and that subject is under the caller's inbox
// (wire.ReplyAllowed). A reply subject elsewhere (a KV key, another
// caller's inbox, another tool) or longer than wire.MaxReplyLen is
// refused and logged: the worker never publishes where a request tells
// it to but there.
//
// Those lines are the caller's to cause, as many as it sends: at most
// unansweredPerSecond a second are written, the next one counting those
// left out ("suppressed"), and the call id and reason (the caller's to
// choose, up to a request's size) are cut short.
func (w *Worker) answerable(in *incoming, id, why string) bool {
	switch {
	case in.reply == "":
		if left, ok := w.unanswered.Take(unansweredPerSecond, time.Now()); ok {
			w.log.Warn("bus: dropping a request without a reply subject", suppressedArgs(left, "subject", in.subject, "call", cutLog(id, wire.MaxCallIDLen),
				"reason", cutLog(why, maxLoggedReason))...)
		}
		return false
	case !wire.ReplyAllowed(in.reply, in.identity):
		if left, ok := w.unanswered.Take(unansweredPerSecond, time.Now()); ok {
			w.log.Warn("bus: refusing a request whose reply subject is outside the caller's inbox", suppressedArgs(left, "subject", in.subject,
				"reply", cutLog(in.reply, wire.MaxReplyLen), "identity", in.identity, "call", cutLog(id, wire.MaxCallIDLen), "allowed", wire.Inbox(in.identity)+">")...)
		}
		return false
	}
	return true
}

// cutID is an invalid call id as an answer names it: its first
// wire.MaxCallIDLen bytes (cut at a character's start).
func cutID(id string) string {
	if len(id) <= wire.MaxCallIDLen {
		return id
	}
	cut := wire.MaxCallIDLen
	for cut > 0 && !utf8.RuneStart(id[cut]) {
		cut--
	}
	return id[:cut]
}

// suppressedArgs are a line's args, with the count of lines left out
// before it when there were.
func suppressedArgs(left int, args ...any) []any {
	if left > 0 {
		args = append(args, "suppressed", left)
	}
	return args
}

// unansweredPerSecond bounds the lines answerable writes.
const unansweredPerSecond = 100

// maxLoggedReason bounds the reason a dropped request's line gives.
const maxLoggedReason = 200

// cutLog is s cut to at most max bytes (at a character's start) for a log
// line, saying how long it was.
func cutLog(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// keptAs is the id the final of call id is to be kept under: its own for
// a durable call or one asking with "1", the one it names for a retry
// (wire.HeaderKeepResult); "" when it is not to be kept.
func keptAs(in *incoming, id string) string {
	if in.dur != nil {
		return id
	}
	switch v := in.header.Get(wire.HeaderKeepResult); {
	case v == "1":
		return id
	case wire.ValidCallID(v):
		return v
	}
	return ""
}

// callKey is the key of a call in calls and tombstones: call ids are
// unique per caller identity.
func callKey(identity, id string) string { return wire.ResultKey(identity, id) }

// replyFinal sends a lone final frame (seq 1): the answer to a call that
// did not run here, which the toolkit hears of (Toolkit.Refused: a
// logging middleware never saw it) and which is recorded as a span as a
// call that ran is (refusedSpan). session is the call's session, ""
// when unknown (a request that could not be read).
func (w *Worker) replyFinal(in *incoming, c wire.Codec, resp *toolkit.Response, session string) {
	if h := w.opts.OnFinal; h != nil {
		h(in.tool, resp.State, resp.Code, 0)
	}
	call := toolkit.ToolCall{ID: resp.ID, Name: in.tool, Identity: in.identity, Session: session}
	if in.dur != nil {
		call.Attempt = int(in.dur.attempt)
	}
	w.tk.Refused(context.Background(), call, resp)
	if ts := w.toolState(in.tool); ts != nil {
		ts.ep.record(resp, 0)
	}
	if in.dur != nil && w.results != nil && wire.ValidCallID(resp.ID) {
		// A durable call's final is kept, also one sent without running
		// it: its caller looks for it when the frame is lost on the way.
		// A delivery's is written once the final is out, and the call
		// settled once the bucket has it (settle).
		var err error
		if in.dur.msg == nil {
			w.results.keep(w.nc, false, callKey(in.identity, resp.ID), resp.ID, resp, &w.meta, w.log, &w.count.jsErrors, nil, keptOf{attempt: in.dur.attempt, reply: in.reply})
		} else if in.dur.keep, err = w.results.keptFinalMsg(w.nc, callKey(in.identity, resp.ID), resp.ID, resp, &w.meta, keptOf{attempt: in.dur.attempt, reply: in.reply}, w.log, &w.count.jsErrors); err != nil {
			w.count.jsErrors.Add(1)
			w.log.Warn("bus: could not keep a call's result", "call", resp.ID, "err", err)
		}
	}
	if w.opts.Tracer != nil {
		tool, _ := w.tk.Get(in.tool)
		refusedSpan(w.opts.Tracer, in.header, &call, tool, resp)
	}
	f := &wire.Frame{Kind: wire.KindFinal, ID: resp.ID, Seq: in.seqAfter() + 1, Final: resp}
	in.dur.mark(f)
	data, err := c.Marshal(f)
	if err != nil {
		w.log.Error("bus: encoding a final frame", "call", resp.ID, "err", err)
		return
	}
	if err := w.publish(in.reply, c, wire.KindFinal, data); err != nil {
		w.log.Error("bus: publishing a final frame", "call", resp.ID, "err", err)
	}
}

// settle ends the durable call of d in the stream for good
// (delivery.settle), once the final replyFinal sent for it is kept.
func (w *Worker) settle(d *delivery) {
	if d != nil && d.keep != nil {
		w.keepThenAck(d, true)
		return
	}
	d.settle()
}

// publish sends a frame of kind k to a caller and counts it. It is
// counted before the publish (and taken back when that fails): a caller
// that has the frame finds it counted.
func (w *Worker) publish(reply string, c wire.Codec, k wire.Kind, data []byte) error {
	return w.publishProbe(reply, "", c, k, data)
}

// publishProbe publishes a frame to reply whose own reply subject is
// probe ("" for none): a probe of the caller's inbox (callerGone).
func (w *Worker) publishProbe(reply, probe string, c wire.Codec, k wire.Kind, data []byte) error {
	w.count.sent(k, len(data))
	var err error
	if c == wire.JSON || probe != "" {
		err = w.publishMsg(reply, probe, c, data)
	} else {
		err = w.nc.Publish(reply, data)
	}
	if err != nil {
		w.count.unsent(k, len(data))
	}
	return err
}

// publishMsg is publishProbe's message with headers or a reply subject.
// Not inlined: its nats.Msg stays off the stack of a call's goroutine
// (sender.run).
//
//go:noinline
func (w *Worker) publishMsg(reply, probe string, c wire.Codec, data []byte) error {
	return w.nc.PublishMsg(&nats.Msg{Subject: reply, Reply: probe, Header: c.Header(), Data: data})
}

// abort undoes a Serve that failed: its subscriptions are gone. The
// durable path's pull loops end, and the session subscriptions go.
func (w *Worker) abort() {
	if w.dur != nil {
		w.dur.stop()
	}
	if w.aff != nil {
		if sub := w.aff.stop(); sub != nil {
			sub.Unsubscribe()
		}
	}
	w.closeInbox()
	w.lists.stop()
	w.clock.close()
}

// closeInbox ends the readers; no call subscription may deliver anymore.
func (w *Worker) closeInbox() { w.closeOnce.Do(func() { close(w.inbox) }) }

// onCall checks a request and registers its call, returning its sender;
// nil when it was answered at once (a bad request, overload, a cancel
// that came first). mem is the input memory the reader took for it: the
// sender gives it back, or the reader when there is none.
func (w *Worker) onCall(m *nats.Msg, mem int) *sender {
	var in incoming
	in.from(m)
	in.mem = mem
	w.arrived(m)
	return w.accept(&in)
}

// arrived notes a call passed on here (Toolbus-Forwarded): a stop may be
// waiting for it (affinity.awaitForwards).
func (w *Worker) arrived(m *nats.Msg) {
	if w.aff != nil && m.Header.Get(wire.HeaderForwarded) != "" {
		w.aff.arrived(m.Reply)
	}
}

// from sets in to the core call m as the worker received it.
func (in *incoming) from(m *nats.Msg) {
	name, identity := callTarget(m.Subject)
	reply := m.Reply
	if m.Header != nil && m.Header.Get(wire.HeaderUnserved) != "" {
		if r := m.Header.Get(wire.HeaderReply); r != "" {
			reply = r // passed on: the caller's
		}
	}
	*in = incoming{subject: m.Subject, tool: name, identity: identity, reply: reply, header: m.Header, data: m.Data}
}

// callTarget is the tool and the caller identity a call subject names:
// tools.call.<tool>[.<identity>] or tools.pinned.<instance>.<tool>[.<identity>].
func callTarget(subject string) (tool, identity string) {
	rest, pinned := strings.CutPrefix(subject, wire.SubjectPinnedPrefix)
	if pinned {
		_, rest, _ = strings.Cut(rest, ".")
	} else {
		rest = strings.TrimPrefix(subject, wire.SubjectCallPrefix)
	}
	tool, identity, _ = strings.Cut(rest, ".")
	return tool, identity
}

// callTool is the tool a call subject names.
func callTool(subject string) string {
	tool, _ := callTarget(subject)
	return tool
}

// jsonHint is what a request that failed to decode as msgpack lacks when
// its body looks like JSON (a msgpack call object never starts with '{'
// or '['): the header that selects JSON. Empty otherwise.
func jsonHint(c wire.Codec, data []byte) string {
	if c != wire.Msgpack {
		return ""
	}
	if b := bytes.TrimLeft(data, " \t\r\n"); len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		return ". The body looks like JSON: send it with the header " + wire.HeaderContentType + ": " + wire.ContentTypeJSON + " (nats req … -H " + wire.HeaderContentType + ":" + wire.ContentTypeJSON + "), and the replies are JSON too"
	}
	return ""
}

// accept checks a request of either path and registers its call,
// returning its sender; nil when it was answered (or, durable, settled or
// left for another delivery) at once.
func (w *Worker) accept(in *incoming) *sender {
	c := wire.CodecOf(in.header)
	name, identity := in.tool, in.identity
	if v := in.header.Get(wire.HeaderVersion); v != "" && v != wire.Version {
		w.badRequest(in, c, "", "", toolkit.CodeInvalidInput, versionError(v))
		return nil
	}
	var req wire.Request
	if err := c.UnmarshalShared(in.data, &req); err != nil { // the data is ours alone
		w.badRequest(in, c, "", "", toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the request body is not a valid %s call object: %v%s", c, err, jsonHint(c, in.data)))
		return nil
	}
	switch {
	case req.ID == "":
		w.badRequest(in, c, "", req.Session, toolkit.CodeInvalidInput, `BadRequestError: the request has no call id; set "id" (one token of [A-Za-z0-9_-], unique per call).`)
		return nil
	case !wire.ValidCallID(req.ID):
		// Named in the answer as given, up to MaxCallIDLen bytes: one as
		// long as a request, twice in the final, would not fit in it.
		w.badRequest(in, c, cutID(req.ID), req.Session, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the call id %s is invalid: it must be 1-%d characters of [A-Za-z0-9_-].", wire.Quote(req.ID), wire.MaxCallIDLen))
		return nil
	case identity != "" && !wire.ValidIdentity(identity):
		// A subject token may hold what an identity may not ("a/b"): the
		// identity names directories and keys further on.
		w.badRequest(in, c, req.ID, req.Session, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the caller identity %s is invalid: it must be 1-%d characters of [A-Za-z0-9_-].", wire.Quote(identity), wire.MaxCallIDLen))
		return nil
	case req.Key != "" && !wire.ValidCallID(req.Key):
		w.badRequest(in, c, req.ID, req.Session, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the idempotency key %s is invalid: it must be 1-%d characters of [A-Za-z0-9_-].", wire.Quote(req.Key), wire.MaxCallIDLen))
		return nil
	case req.Name != "" && req.Name != name:
		w.badRequest(in, c, req.ID, req.Session, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the request names the tool %s but was sent to %s%s.", wire.Quote(req.Name), wire.SubjectCallPrefix, name))
		return nil
	case strings.HasPrefix(req.Session, "\x00"):
		// A session refused as invalid is left off the span.
		w.badRequest(in, c, req.ID, "", toolkit.CodeInvalidInput, "BadRequestError: a session name must not start with a NUL character.")
		return nil
	case name == toolkit.MetaToolName && req.Session == "":
		w.badRequest(in, c, req.ID, req.Session, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: %s needs a session: group activation is stored per session.", toolkit.MetaToolName))
		return nil
	}
	// The session outlives the call where it is remembered: the sessions
	// this worker holds (affinity: owned, wrote), a session-bound tool's
	// state kept by session, a memory group state. Decoded, it shares the
	// request's payload, which each of those would keep whole, input and
	// all, past the call and outside MaxInputMemory: it is given its own
	// bytes.
	req.Session = strings.Clone(req.Session)
	hb, timeout, rev, err := w.parseHeaders(in.header)
	if err != nil {
		w.badRequest(in, c, req.ID, req.Session, toolkit.CodeInvalidInput, "BadRequestError: "+err.Error())
		return nil
	}
	if !w.answerable(in, req.ID, "") {
		in.dur.settle()
		return nil
	}
	// A call that waited for input memory: its timeout counts from when
	// it came.
	var deadline time.Time
	if timeout != nil && !in.received.IsZero() {
		deadline = in.received.Add(*timeout)
		d := time.Until(deadline)
		timeout = &d
	}
	if _, served := w.tk.Get(name); !served && w.unserved(in, c, req.ID, req.Session, toolkit.SessionScope(identity, req.Session), deadline) {
		return nil
	}
	if in.dur != nil {
		if timeout != nil { // counted from when the call was queued
			d := *timeout - time.Since(in.dur.published)
			timeout = &d
		}
		if !w.mayRepeat(in, c, req.ID, req.Session) {
			return nil
		}
	} else if w.dur != nil && w.dur.byDefault(name) {
		if w.dur.enqueue(in, req.ID, req.Session, deadline) {
			return nil
		}
	}
	call := toolkit.ToolCall{ID: req.ID, Name: name, Input: req.Input, RawInput: req.RawInput, Session: req.Session, Identity: identity, GroupsRevision: rev, IdempotencyKey: req.Key}
	if name == toolkit.MetaToolName && len(req.Input) > 0 {
		// The order the caller wrote the groups in, and the values it
		// sent as floats, which its answer to a bad value names as
		// AgentScope does; the map has neither.
		call.InputKeys, call.InputFloats = wire.InputShape(c, in.data)
	}
	if in.dur != nil {
		call.Attempt = int(in.dur.attempt)
	}
	key := callKey(identity, req.ID)
	if in.dur != nil && !w.dur.withoutCancels() && w.unheard(in.dur) {
		// Taken from the queue after a cancel this worker may not have
		// heard: the cancels stream has it (looked up once the stream's
		// bind at start has ended).
		if reason, ok := w.dur.cancelled(identity, req.ID, in.dur.published); ok {
			w.count.cancelled.Add(1)
			w.replyFinal(in, c, w.cancelledFinal(req.ID, reason == wire.CancelReasonDeadline), req.Session)
			w.settle(in.dur)
			return nil
		}
	}

	w.mu.Lock()
	if tomb, ok := w.popTombstoneLocked(key, in.reply); w.interrupting || ok {
		w.mu.Unlock()
		final := w.cancelledFinal(req.ID, tomb.deadline)
		if ok { // the caller's cancel, not the worker's stop
			w.count.cancelled.Add(1)
		} else if w.notRunHere(in, c, req.ID, req.Session, toolkit.SessionScope(identity, req.Session), deadline) {
			return nil
		} else {
			final = w.drainedFinal(req.ID)
		}
		w.replyFinal(in, c, final, req.Session)
		w.settle(in.dur)
		return nil
	}
	if _, dup := w.calls[key]; dup {
		w.mu.Unlock()
		if in.dur != nil {
			// An earlier delivery still runs here: it acknowledges the
			// call when it ends.
			return nil
		}
		w.badRequest(in, c, req.ID, req.Session, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: a call with id %q is already running here; call ids must be unique.", req.ID))
		return nil
	}
	if timeout != nil && *timeout <= 0 {
		w.mu.Unlock()
		w.count.cancelled.Add(1)
		w.replyFinal(in, c, w.finalFor(req.ID, toolkit.CodeTimeout, "TimeoutError: The tool call's deadline had passed before it started."), req.Session)
		w.settle(in.dur)
		return nil
	}
	// The call keeps what its request holds decoded, not the most its
	// body could have decoded to: the rest goes back once it is
	// registered (whoever sends its final from then on gives back what
	// it kept), before its reader takes the next call.
	mem, spare := in.mem, 0
	if held := heldInput(in.data, in.header, &req); held < mem {
		mem, spare = held, mem-held
	}
	now := time.Now()
	s := &sender{w: w, reply: in.reply, id: req.ID, key: key, mem: mem, codec: c, hbEvery: hb, call: call, lastPub: now, lastAlive: now, started: now, dur: in.dur, tool: w.toolState(name), batch: req.More,
		// A durable call's final is always kept: its caller looks for it
		// when the frame carrying it was lost on the way.
		keepID: keptAs(in, req.ID)}
	if s.keep = w.results != nil && s.keepID != ""; s.keep {
		s.keepKey = callKey(in.identity, s.keepID)
		s.attempt = keptAttempt(req.ID, s.keepID)
		if in.dur != nil {
			s.attempt = in.dur.attempt
		}
	}
	s.seq = in.seqAfter()
	if in.dur == nil { // to pass the call on should its tool be removed before it runs
		s.hdr, s.data = in.header, in.data
	}
	if w.aff != nil && in.dur == nil { // a call without a session is the default session's
		if t, ok := w.tk.Get(name); ok && t.SessionBound() {
			kept := *in // in itself stays on the reader's stack
			s.in = &kept
		}
	}
	base := context.Background()
	if w.opts.Tracer != nil {
		base, s.span = w.callSpan(in.header, &call)
	}
	if name == toolkit.MetaToolName { // its groups may be other workers' too
		base = toolkit.WithFleetGroups(base, w.fleet.groups)
	}
	s.ctx, s.cancel = context.WithCancelCause(base)
	if timeout != nil {
		s.ctx, s.stopT = context.WithTimeout(s.ctx, *timeout)
	}
	w.calls[key] = s
	poke := w.clock.started()
	w.mu.Unlock()
	w.inputs.release(spare)
	if poke {
		w.clock.poke()
	}
	return s
}

// overloaded is the answer to a call that would run past MaxInFlight.
func (w *Worker) overloaded(id string) *toolkit.Response {
	w.count.overloaded.Add(1)
	resp := w.finalFor(id, toolkit.CodeOverloaded, fmt.Sprintf(
		"OverloadedError: the worker is running its limit of %d calls; retry after %s.", w.opts.MaxInFlight, w.opts.RetryAfter))
	resp.Metadata[wire.MetaRetryAfterMS] = w.opts.RetryAfter.Milliseconds()
	return resp
}

// finalFor is a final the worker makes without running the call.
func (w *Worker) finalFor(id string, code toolkit.Code, msg string) *toolkit.Response {
	r := toolkit.Final(id, code, msg)
	r.Metadata = map[string]any{wire.MetaWorker: w.opts.Instance}
	return r
}

// versionError is the answer to a request in a wire version this worker
// does not speak.
func versionError(v string) string {
	return fmt.Sprintf("BadRequestError: header %s: wire version %s is not supported; this worker speaks version %s.", wire.HeaderVersion, wire.Quote(v), wire.Version)
}

// seqAfter is the sequence number a call's frames follow: 0, or on a
// call passed on by the worker that received it, the last that worker
// sent the caller (heartbeats while it looked for the session's worker).
// Bounded: a made-up value only confuses its own caller.
func seqAfter(h nats.Header) uint64 {
	if h == nil || (h.Get(wire.HeaderForwarded) == "" && h.Get(wire.HeaderUnserved) == "") {
		return 0
	}
	after, err := strconv.ParseUint(h.Get(wire.HeaderSeqAfter), 10, 64)
	if err != nil || after >= 1<<40 {
		return 0
	}
	return after
}

// parseHeaders reads the heartbeat, timeout and groups revision headers,
// and checks the keep-result header.
func (w *Worker) parseHeaders(h nats.Header) (hb time.Duration, timeout *time.Duration, rev uint64, err error) {
	hb = DefaultHeartbeat
	if h == nil {
		return hb, nil, 0, nil
	}
	if v := h.Get(wire.HeaderHeartbeat); v != "" {
		ms, perr := parseMillis(v)
		if perr != nil {
			return 0, nil, 0, fmt.Errorf("header %s must be a number of milliseconds, got %s", wire.HeaderHeartbeat, wire.Quote(v))
		}
		// Clamped, as the contract says: 0 or less is the minimum. The
		// bound is checked before multiplying, which could overflow.
		hb = MaxHeartbeat
		if ms < MaxHeartbeat.Milliseconds() {
			hb = max(time.Duration(max(ms, 0))*time.Millisecond, MinHeartbeat)
		}
	}
	if v := h.Get(wire.HeaderTimeout); v != "" {
		ms, perr := parseMillis(v)
		if perr != nil {
			return 0, nil, 0, fmt.Errorf("header %s must be a number of milliseconds, got %s", wire.HeaderTimeout, wire.Quote(v))
		}
		// ≤ 0: timeout at once; past a century (a "never" deadline) it is
		// clamped there; never an overflow.
		d := time.Duration(min(max(ms, 0), maxTimeoutMS)) * time.Millisecond
		timeout = &d
	}
	if rev, err = parseRevision(h); err != nil {
		return 0, nil, 0, err
	}
	// "1", or the call id to keep the final under (keptAs): anything else
	// would keep nothing, with nothing saying so.
	if v := h.Get(wire.HeaderKeepResult); v != "" && !wire.ValidCallID(v) {
		return 0, nil, 0, fmt.Errorf("header %s must be 1 or a call id (1-%d characters of [A-Za-z0-9_-]), got %s", wire.HeaderKeepResult, wire.MaxCallIDLen, wire.Quote(v))
	}
	return hb, timeout, rev, nil
}

// parseMillis reads a header's decimal integer of milliseconds. One past
// int64 is an integer all the same, and is clamped as the contract says
// (a caller's uint64 maximum meaning "never"); anything else is refused.
func parseMillis(v string) (int64, error) {
	ms, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		return ms, nil // math.MaxInt64 or math.MinInt64
	}
	return ms, err
}

// maxTimeoutMS is the longest timeout a call header can set (about 146
// years); longer ones are clamped to it.
const maxTimeoutMS = int64(time.Duration(1<<62) / time.Millisecond)

// parseRevision reads the groups revision header; absent is 0.
func parseRevision(h nats.Header) (uint64, error) {
	v := h.Get(wire.HeaderGroupsRevision)
	if v == "" {
		return 0, nil
	}
	r, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("header %s must be an unsigned integer, got %s", wire.HeaderGroupsRevision, wire.Quote(v))
	}
	return r, nil
}

// onCancel cancels a running call, or leaves a tombstone for a call that
// has not arrived yet. The body is empty, or wire.CancelReasonDeadline when the
// caller's deadline passed (the call then ends with code timeout). A cancel
// on tools.cancel.<id> reaches anonymous calls only, one on
// tools.cancel.<identity>.<id> that identity's calls only.
func (w *Worker) onCancel(m *nats.Msg) {
	rest := strings.TrimPrefix(m.Subject, wire.SubjectCancelPrefix)
	identity, id, scoped := strings.Cut(rest, ".")
	if !scoped {
		identity, id = "", rest
	}
	if !wire.ValidCallID(id) || (scoped && !wire.ValidIdentity(identity)) {
		return
	}
	if !isCancel(m.Header, m.Data) {
		w.log.Debug("bus: ignoring a message on a cancel subject that is no caller's cancel (a server's answer sent there as another request's reply)", "subject", m.Subject)
		return
	}
	key := callKey(identity, id)
	cause := toolkit.ErrCallerCancelled
	if string(m.Data) == wire.CancelReasonDeadline {
		cause = context.DeadlineExceeded
	}
	// The cancel of one call, by its reply subject, when it says: a
	// cancel that comes after its call ended (it raced the final, or the
	// call's worker was lost) then spares a later call under the same id.
	reply := m.Header.Get(wire.HeaderReply)
	if len(reply) > wire.MaxReplyLen {
		return // no call answered here has it (answerable)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.calls[key]; s != nil {
		if reply == "" || reply == s.reply {
			s.cancel(cause) // counted by its final (finalLocked)
		}
		return
	}
	now := time.Now()
	for len(w.tombQ) > 0 && (now.After(w.tombQ[0].exp) || len(w.tombQ) >= maxTombstones) {
		q := w.tombQ[0]
		if e, ok := w.tombs[q.id]; ok && !e.exp.After(q.exp) {
			delete(w.tombs, q.id)
			if !now.After(e.exp) {
				w.tombsEvicted = now // a live one: durable calls look up their cancels
			}
		}
		if w.tombsBy[q.identity]--; w.tombsBy[q.identity] == 0 {
			delete(w.tombsBy, q.identity)
		}
		w.tombQ = w.tombQ[1:]
	}
	if e, ok := w.tombs[key]; ok && e.reply == "" && reply != "" && now.Before(e.exp) {
		// A cancel of any call under the id is kept: one of a single call
		// does not narrow it.
		return
	}
	if w.tombsBy[identity] >= maxTombstonesPerCaller {
		// Not kept: the caller's own flood. Durable calls look their
		// cancels up.
		w.tombsEvicted = now
		return
	}
	exp := now.Add(w.opts.TombstoneTTL)
	// A copy: the header's value is a part of the cancel's whole header
	// block, which a caller may pad as it likes.
	w.tombs[key] = tombEntry{exp: exp, deadline: cause == context.DeadlineExceeded, reply: strings.Clone(reply)}
	w.tombQ = append(w.tombQ, tombstone{id: key, identity: identity, exp: exp})
	w.tombsBy[identity]++
}

// isCancel reports whether a message on a cancel subject is a caller's
// cancel: a cancel's body (cancelBody) with the header Toolbus-Version: 1,
// and no status header nor the headers of a JetStream message. NATS does
// not check a request's reply subject, so any client may have the server
// answer a request of its own (JetStream's API, a direct get, a consumer's
// delivery) on another identity's cancel subject; none of those answers
// is a cancel. The version header is what tells a caller's empty cancel
// from a direct get asked with no_hdr of an empty value the asker may read
// (a 404 it had stored under a key of its own): that answer is an empty
// message with no headers at all (subjects.md: Cancel).
func isCancel(h nats.Header, body []byte) bool {
	if !cancelBody(body) || !versioned(h) {
		return false
	}
	for k := range h {
		if k == "Status" || k == "KV-Operation" || strings.HasPrefix(k, "Nats-") {
			return false
		}
	}
	return true
}

// cancelBody reports whether body is a cancel's: empty (the caller
// cancelled) or wire.CancelReasonDeadline (its deadline passed).
func cancelBody(body []byte) bool {
	return len(body) == 0 || string(body) == wire.CancelReasonDeadline
}

// cancelMsg is the cancel (on tools.cancel.…) or its record (on
// tools.cancelled.…) a caller publishes: reason as its body, with the
// wire version (isCancel, isCancelRecord).
func cancelMsg(subject, reason string) *nats.Msg { return versionedMsg(subject, []byte(reason)) }

// versionedMsg is a message to subject with data and the header
// Toolbus-Version: 1: how a client marks a cancel or its record and a
// worker a kept result, which no server answer stored there carries
// (versioned).
func versionedMsg(subject string, data []byte) *nats.Msg {
	return &nats.Msg{Subject: subject, Header: nats.Header{wire.HeaderVersion: {wire.Version}}, Data: data}
}

// versioned reports whether headers h carry Toolbus-Version: 1 exactly
// once (versionedMsg).
func versioned(h nats.Header) bool {
	return slices.Equal(h.Values(wire.HeaderVersion), []string{wire.Version})
}

// cancelledFinal is the final of a call cancelled before it ran:
// interrupted, or timeout when the cancel said the caller's deadline
// passed (that is the cause to report).
func (w *Worker) cancelledFinal(id string, deadline bool) *toolkit.Response {
	if deadline {
		return w.finalFor(id, toolkit.CodeTimeout, toolkit.TimeoutText)
	}
	return w.finalFor(id, toolkit.CodeInterrupted, toolkit.InterruptedText)
}

// drainedFinal is the final of a call the worker does not run because it
// is stopping past its grace: interrupted, saying so (toolkit.DrainedText,
// wire.MetaDrained), as a running call its stop interrupts says it.
func (w *Worker) drainedFinal(id string) *toolkit.Response {
	w.stopDrained.Add(1)
	r := w.finalFor(id, toolkit.CodeInterrupted, toolkit.DrainedText)
	r.Metadata[wire.MetaDrained] = true
	return r
}

// popTombstoneLocked returns (and forgets) a live tombstone for id that
// cancels the call with reply subject reply: one of another call under
// the same id (an earlier one's cancel, come after it ended) is left.
func (w *Worker) popTombstoneLocked(id, reply string) (tombEntry, bool) {
	e, ok := w.tombs[id]
	if !ok || (e.reply != "" && e.reply != reply) {
		return tombEntry{}, false
	}
	delete(w.tombs, id)
	return e, time.Now().Before(e.exp)
}

// Stop shuts the worker down gracefully: it announces its goodbye (when
// announcing), stops taking calls (calls
// already delivered to it still run), waits for the running calls to
// finish until ctx is done, then interrupts the rest (their callers get
// an interrupted final, cause toolkit.ErrDraining, whose notice is
// toolkit.DrainedText) and waits for their
// finals to be sent. The connection is flushed, not closed. Stop returns
// an error wrapping ctx's, saying how many calls it interrupted, when the
// grace period ran out, nil otherwise; the calls it interrupted are those
// running then and those taken and not yet run that it answered
// interrupted (a call passed on to another worker is not one). A worker
// not connected to NATS (its server gone, the client reconnecting) has
// nothing to drain: it ends its subscriptions at once, logs that it
// stopped without draining, and waits only for its running calls, as
// above; when it interrupted none, it returns nil, whatever ctx. A Stop while another runs waits for it (or for its
// own ctx) and returns what it returned.
func (w *Worker) Stop(ctx context.Context) (err error) {
	w.mu.Lock()
	if w.stopping {
		stopped := w.stopped
		w.mu.Unlock()
		select {
		case <-stopped:
			return w.stopErr
		case <-ctx.Done():
			return fmt.Errorf("bus: waiting for the worker's stop under way: %w", ctx.Err())
		}
	}
	w.stopping = true
	over := ctx.Err() != nil // a grace of 0, a second signal
	w.stopped = make(chan struct{})
	defer func() {
		w.stopErr = err
		close(w.stopped)
	}()
	subs := make([]*nats.Subscription, 0, 2*len(w.subs)+2)
	for _, s := range w.subs {
		subs = append(subs, s[:]...)
	}
	subs = append(subs, w.draining...)
	subs = append(subs, w.listSubs[:]...)
	subs = append(subs, w.svcSubs...)
	w.mu.Unlock()
	// What NATS dropped since the clock last looked, before the
	// subscriptions end (their counts go with them).
	w.checkDrops()
	drain := func(s *nats.Subscription) {
		if w.cutOff([]*nats.Subscription{s}) {
			// Drained while reconnecting, it would be made again on
			// the server once the connection is back (cutOff).
			return
		}
		if err := s.Drain(); err != nil && !errors.Is(err, nats.ErrBadSubscription) {
			w.log.Warn("bus: draining a subscription", "subject", s.Subject, "err", err)
		}
	}
	if over {
		// With its grace over already, no call it takes from now on
		// runs, also one passed on to it after its probe subscription
		// is gone (below): each is passed on to its tool's queue group
		// (notRunHere), which it leaves first, so that the group does
		// not hand the call back here. So is one it took before and has
		// not run yet: cancelled now, not once its pull loops and its
		// goodbye are done, meanwhile running.
		for _, s := range subs {
			drain(s)
		}
		w.mu.Lock()
		w.interrupting = true
		for _, s := range w.calls {
			s.cancel(toolkit.ErrDraining)
		}
		w.mu.Unlock()
	}
	w.stopWatch()
	if w.dur != nil {
		// Durable calls not yet pulled stay in the queue for the others.
		w.dur.stop()
	}
	var pinned *nats.Subscription // calls passed or sent to this instance
	if w.aff != nil {
		pinned = w.aff.stop()
	}
	// The goodbye first: fleets stop listing the worker before it stops
	// taking calls.
	if w.ann != nil {
		if err := w.ann.Stop(); err != nil {
			w.log.Warn("bus: announcing the goodbye", "err", err)
		}
	}

	if !over {
		for _, s := range subs {
			drain(s)
		}
	}
	if w.afterDrains != nil {
		w.afterDrains()
	}
	if pinned != nil && ctx.Err() == nil {
		// Last, once the calls other workers probed it for are here:
		// drained before, it would take none of them.
		w.aff.awaitForwards(ctx)
		if ctx.Err() == nil {
			drain(pinned)
			subs = append(subs, pinned)
			pinned = nil
		}
	}
	// Wait until every delivered call has been handed to a goroutine and
	// every running call has sent its final.
	graceErr := ctx.Err() // past it, with the forwards still awaited (pinned)
	if pinned == nil {
		graceErr = w.waitIdle(ctx, subs)
	}
	if graceErr != nil {
		// Past the grace nothing more runs: calls already taken, and
		// those still arriving, are answered interrupted.
		w.mu.Lock()
		w.interrupting = true
		for _, s := range w.calls {
			s.cancel(toolkit.ErrDraining)
		}
		n := len(w.calls)
		w.mu.Unlock()
		if pinned != nil {
			// The grace ended before the calls it was probed for came
			// (or was over when the stop began): they are still waited
			// for, not long, to be answered interrupted rather than
			// lost.
			wait, cancel := context.WithTimeout(context.Background(), stopFlushTimeout)
			w.aff.awaitForwards(wait)
			cancel()
			drain(pinned)
			subs = append(subs, pinned)
		}
		// The drains end once the server confirms them, a round trip: the
		// calls it delivered before that are answered, not dropped with
		// the subscriptions, whose callers would hear nothing and end them
		// worker_lost. A worker cut off from NATS waits for that in vain,
		// so not for long, and not at all once it knows (cutOff).
		w.cutOff(subs)
		waitDrained(w.nc, subs, stopFlushTimeout)
		for _, s := range subs {
			s.Unsubscribe()
		}
		// Each sender gives its tool AbandonAfter, then sends the final
		// itself, so this wait is bounded.
		w.waitIdle(context.Background(), subs)
		graceErr = w.graceOver(graceErr, n)
	} else if over && w.stopDrained.Load() > 0 {
		// Over from the start, the calls taken before were answered
		// interrupted (drainedFinal) before the subscriptions drained.
		graceErr = w.graceOver(ctx.Err(), 0)
	}
	// The list subscriptions are drained: the requests they took are
	// answered before the connection is flushed.
	w.lists.stop()
	w.mu.Lock()
	w.subs = map[string][2]*nats.Subscription{}
	w.mu.Unlock()
	w.cancelSub.Unsubscribe()
	// No call runs: none waits for its caller's answer.
	w.answerSub.Unsubscribe()
	w.clock.close()
	if err := flushBounded(w.nc); err != nil {
		w.log.Warn("bus: flushing at stop", "err", err)
	}
	w.passed.stop()
	w.keeps.stop()
	w.fleet.close()
	return graceErr
}

// graceOver is Stop's error once its grace ended (err) with n calls
// running, which it interrupted: it also counts the calls it answered
// interrupted without running them (taken, not yet run), and is nil when
// there were neither and the worker, cut off from NATS, had nothing to
// drain.
func (w *Worker) graceOver(err error, n int) error {
	m := int(w.stopDrained.Load())
	notRun := ""
	switch m {
	case 0:
	case 1:
		notRun = "; 1 call taken and not run was answered interrupted"
	default:
		notRun = fmt.Sprintf("; %d calls taken and not run were answered interrupted", m)
	}
	switch {
	case n == 0 && m == 0 && w.stopCutOff.Load():
		// Nothing ran, nothing could be drained: the grace did not
		// end too soon for anything.
		return nil
	case n == 0 && m == 0:
		return fmt.Errorf("bus: the grace period ended before the worker's subscriptions drained; no call was running: %w", err)
	case n == 0:
		return fmt.Errorf("bus: the grace period ended with no call running%s: %w", notRun, err)
	case n == 1:
		return fmt.Errorf("bus: the grace period ended with 1 call running; it was interrupted%s: %w", notRun, err)
	default:
		return fmt.Errorf("bus: the grace period ended with %d calls running; they were interrupted%s: %w", n, notRun, err)
	}
}

// stopFlushTimeout bounds the flushes of a stop: a connection that is down
// keeps what was published for when it is back, and a stop does not wait
// for that.
const stopFlushTimeout = 2 * time.Second

// flushBounded flushes nc when it is connected, for at most
// stopFlushTimeout.
func flushBounded(nc *nats.Conn) error {
	if !nc.IsConnected() {
		return nil
	}
	err := nc.FlushTimeout(stopFlushTimeout)
	if errors.Is(err, nats.ErrConnectionClosed) {
		return nil
	}
	return err
}

// waitDrained waits until the subscriptions' drains have ended, while
// nc is connected, for at most d.
func waitDrained(nc *nats.Conn, subs []*nats.Subscription, d time.Duration) {
	deadline := time.Now().Add(d)
	for slices.ContainsFunc(subs, (*nats.Subscription).IsValid) && nc.IsConnected() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// cutOff ends the subscriptions of a stop when the worker is not
// connected to NATS (its server gone, the client reconnecting), reporting
// whether it did. Such a worker has nothing to drain: the server delivers
// it nothing more, and cannot confirm the drains, which nats.go would
// wait for until its flush timeout (10s) or the reconnect. The calls
// delivered before are in the inbox, and still run. Unsubscribed while
// reconnecting, the subscriptions are not made again on the server when
// the connection is back; drained, they would be: nats.go sends no UNSUB
// for a drain while reconnecting, makes every subscription it holds
// again on the reconnected server, draining ones included, and then
// ends the drains on its side only, so the server would go on handing
// the stopped worker calls its client drops. The stop's drains look
// here first. It logs the first time only.
func (w *Worker) cutOff(subs []*nats.Subscription) bool {
	if !slices.ContainsFunc(subs, (*nats.Subscription).IsValid) || w.nc.IsConnected() {
		return false
	}
	for _, s := range subs {
		s.Unsubscribe()
	}
	if w.stopCutOff.Swap(true) {
		return true
	}
	w.mu.Lock()
	n := len(w.calls)
	w.mu.Unlock()
	if n == 0 {
		w.log.Warn("bus: not connected to NATS: stopped without draining; no call was running", "in_flight", n)
	} else {
		w.log.Warn("bus: not connected to NATS: stopped without draining; the running calls may finish within the grace period, their finals sent if the connection is back before it closes",
			"in_flight", n)
	}
	return true
}

// waitIdle polls until the subscriptions are drained and no call runs, or
// ctx is done.
func (w *Worker) waitIdle(ctx context.Context, subs []*nats.Subscription) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		idle := !slices.ContainsFunc(subs, (*nats.Subscription).IsValid) || w.cutOff(subs)
		if idle {
			// Nothing delivers to the inbox anymore; the readers finish
			// what it holds, then end. Once it is empty, a call taken
			// earlier is counted in mayHold (a reader counts itself before
			// it receives) until it is registered in w.calls.
			w.closeInbox()
			idle = len(w.inbox) == 0 && w.mayHold.Load() == 0
		}
		if idle {
			w.mu.Lock()
			idle = len(w.calls) == 0 && w.finishing.Load() == 0
			w.mu.Unlock()
		}
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}
