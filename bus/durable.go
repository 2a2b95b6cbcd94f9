package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// The durable path (subjects.md: Durable calls). A durable call is a
// message of the calls stream (wire.StreamCalls, a JetStream work queue),
// published by the client (ToolCall.Durable) or, for a tool that is
// durable by default, by the worker that received it on the core path.
// Workers pull a tool's calls from one consumer per tool, only as many as
// they have room for, so the least busy worker takes the next call. While
// a call runs the worker tells JetStream it is in progress; when the
// worker is lost, the call is delivered again after AckWait, to any
// worker, up to MaxDeliver times. Only read-only and idempotent tools are
// run again: another tool's redelivered call ends worker_lost, saying it
// may have run. The frames of a durable call carry its attempt; each
// attempt numbers its frames from 1.

// DurableOptions turn a worker's durable path on (WorkerOptions.Durable).
type DurableOptions struct {
	// JetStream is where the calls stream lives; required.
	JetStream jetstream.JetStream
	// AckWait is how long after the last sign of life of the worker
	// running a call the call is delivered again (the worker confirms
	// every AckWait/3 while it runs). Default 30s.
	AckWait time.Duration
	// MaxDeliver is how many times a call is delivered at most. Default 3.
	MaxDeliver int
	// Dedup is the window in which a call published again with the same
	// id (and identity) is stored once, so it runs once. Default 2m.
	Dedup time.Duration
	// Replicas of the calls stream when this worker creates it (1-5).
	// Default 1.
	Replicas int
	// ConsumerIdle is how long a tool's consumer outlives the last worker
	// pulling from it: JetStream deletes it then, so the consumers of
	// tools no worker serves any more (removed, renamed, an MCP server's
	// tools gone) do not pile up in the server. A worker that serves the
	// tool again makes it again, and the calls still in the stream are
	// delivered to it; so does a worker still serving it whose pulls
	// paused that long because every MaxInFlight slot was busy with other
	// calls (calls of the tool itself running keep it: JetStream counts
	// their "in progress" as activity), or whose pull finds it deleted by
	// hand. Default 24h, the calls stream's MaxAge. The worker
	// that creates the consumer sets it, as AckWait and MaxDeliver.
	ConsumerIdle time.Duration
	// Tools are durable by default, as if registered with
	// toolkit.Durable: their calls that arrive on the core path are put
	// in the queue.
	Tools []string
}

func (o *DurableOptions) withDefaults() DurableOptions {
	r := *o
	if r.AckWait <= 0 {
		r.AckWait = 30 * time.Second
	}
	if r.MaxDeliver <= 0 {
		r.MaxDeliver = 3
	}
	if r.Dedup <= 0 {
		r.Dedup = 2 * time.Minute
	}
	if r.Replicas <= 0 {
		r.Replicas = 1
	}
	if r.ConsumerIdle <= 0 {
		r.ConsumerIdle = callsMaxAge
	}
	return r
}

// CallsStreamConfig is the calls stream as whoever creates it first
// creates it: a work queue of every durable call subject, deduplicated by
// message id within dedup, kept at most a day.
func CallsStreamConfig(dedup time.Duration, replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        wire.StreamCalls,
		Description: "toolbus: durable calls waiting for a worker",
		Subjects:    []string{wire.SubjectDurablePrefix + ">"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Duplicates:  dedup,
		MaxAge:      callsMaxAge,
		MaxMsgs:     CallsMaxCalls,
		MaxBytes:    CallsMaxBytes,
		Discard:     jetstream.DiscardNew,
	}
}

// callsMaxAge is how long a durable call waits in the calls stream at
// most.
const callsMaxAge = 24 * time.Hour

// queueFullText is the answer to a durable call the full calls stream
// refused (err, JetStream's).
func queueFullText(err error) string {
	return fmt.Sprintf("OverloadedError: the durable queue is full (the %s stream is at its bound: %v); retry after %s.", wire.StreamCalls, err, queueFullRetry)
}

// queueFullRetry is how long a caller whose durable call found the calls
// stream full waits before sending it again (retry_after_ms).
const queueFullRetry = time.Second

// CallsMaxCalls and CallsMaxBytes bound the calls stream a worker
// creates: the calls waiting for a worker or running, in count and in
// bytes. A caller flooding durable calls (of a tool no worker takes, or
// faster than the fleet takes them) fills the stream, not the servers'
// store, which every bucket and stream shares. A full stream refuses the
// new call (DiscardNew: nothing queued is dropped to make room), which the
// client answers overloaded, as does a worker queueing a call of a tool
// durable by default. A stream made earlier, or by an operator,
// keeps its own limits (`nats stream edit toolbus_calls`). JetStream
// reserves MaxBytes from the servers' store when the stream is made:
// where there is no room for it, the stream is made bounded in calls
// only (the worker logs it).
const (
	CallsMaxCalls = 1 << 20
	CallsMaxBytes = 1 << 30
)

// CancelsStreamConfig is the cancels stream as whoever creates it first
// creates it: the last cancel of each durable call (the client publishes
// it next to the cancel), kept as long as a call may wait in the calls
// stream and bounded in count and bytes. Every caller of the account
// shares it, so a full stream refuses a new record (DiscardNew) rather
// than dropping the oldest, which would let one caller's records push
// out another's, whose cancelled call would then run; the refusal goes
// back to the caller (Client.Cancel's error). A record is at most
// CancelRecordMaxBytes. A stream made earlier, or by an operator, keeps
// its own settings: a worker binding one that drops its oldest records
// says so in a warning (`nats stream edit toolbus_cancels --discard new`).
func CancelsStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              wire.StreamCancels,
		Description:       "toolbus: cancels of durable calls, for the worker that takes a call after its cancel",
		Subjects:          []string{wire.SubjectCancelledPrefix + ">"},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          replicas,
		MaxAge:            24 * time.Hour,
		MaxMsgsPerSubject: 1,
		MaxMsgs:           1 << 20,
		MaxBytes:          128 << 20,
		MaxMsgSize:        CancelRecordMaxBytes,
		Discard:           jetstream.DiscardNew,
		AllowDirect:       true,
	}
}

// CancelRecordMaxBytes bounds a record in the cancels stream, its
// headers and body: a cancel's are a few dozen bytes.
const CancelRecordMaxBytes = 1 << 10

// streamsBindWait bounds binding (or creating) the cancels stream, and the
// exhausted stream, in nanoseconds: without them the worker serves all
// the same. 5 s; a variable for tests (SetBindWait), which hold a bind
// under way for as long as they look.
var streamsBindWait atomic.Int64

func init() { streamsBindWait.Store(int64(5 * time.Second)) }

// streamBindWait is streamsBindWait as a duration.
func streamBindWait() time.Duration { return time.Duration(streamsBindWait.Load()) }

// delivery is one delivery of a durable call to this worker.
type delivery struct {
	msg    *nats.Msg
	handed bool // given back to the queue: not acknowledged
	// unkept: its final could not be kept (keepBeforeFinal); not
	// acknowledged, it is delivered again (not on its last delivery).
	unkept bool
	// repeatable: the tool is read-only or idempotent, as the worker
	// knew it when it began pulling its calls (known also once the tool
	// is removed).
	repeatable bool
	attempt    uint64
	max        uint64
	redeliver  time.Duration
	published  time.Time
	seq        uint64 // in the calls stream
	// keep is the message keeping the call's final in the results
	// bucket: the call is acknowledged once the bucket has it
	// (keepThenAck).
	keep *nats.Msg
}

// mark sets a frame's attempt fields; nothing on the core path.
func (d *delivery) mark(f *wire.Frame) {
	if d == nil {
		return
	}
	f.Attempt, f.MaxAttempts, f.RedeliverMS = d.attempt, d.max, uint64(d.redeliver.Milliseconds())
}

// settle ends the call in the stream for good: it was answered without
// running (a bad request, a cancel that came first) or must not run again.
func (d *delivery) settle() {
	if d != nil {
		d.msg.Term()
	}
}

// done acknowledges a call whose final was sent.
func (d *delivery) done() {
	if d != nil && !d.handed && !d.unkept {
		d.msg.Ack()
	}
}

// handBack gives the call back to the queue for another worker at once.
func (d *delivery) handBack() {
	d.handed = true
	d.msg.Nak()
}

// handBackLater gives the call back to the queue after fetchWait: this
// worker's own pull request, open for at most that long, cannot take it
// again.
func (d *delivery) handBackLater() {
	d.handed = true
	d.msg.NakWithDelay(fetchWait)
}

// last reports whether this is the call's last delivery: left
// unacknowledged, it is not delivered again but ends worker_lost.
func (d *delivery) last() bool {
	return d.max > 0 && d.attempt >= d.max
}

// mayBeAgain reports whether the queue may have delivered the call again
// while this delivery, taken at started, ran: a delivery again, or one
// that ran for half its AckWait (its worker may have been frozen or cut
// off past it). Its final is then kept only over no later delivery's
// (keepLatest); a quick first delivery's is kept without reading first.
func (d *delivery) mayBeAgain(started time.Time) bool {
	return d.attempt > 1 || time.Since(started) >= d.redeliver/2
}

// alive tells JetStream the call is still being worked on.
func (d *delivery) alive() {
	if d != nil {
		d.msg.InProgress()
	}
}

// durablePath is a worker's side of the durable path: the calls stream,
// and one pull loop per tool served.
type durablePath struct {
	w      *Worker
	o      DurableOptions
	js     jetstream.JetStream
	stream jetstream.Stream
	// cancels is the cancels stream, bound in the background as the
	// worker starts (bindCancels); cancelsBound is closed once that bind
	// has ended. cancels is nil after it when it could not be bound (a
	// worker key of an older role set may not): then only the cancels
	// this worker heard count. cancelsCut: the bind was ended by a stop,
	// and the first lookup binds the stream itself (cancelsStream).
	// Both under cancelsMu.
	cancelsBound chan struct{}
	cancelsMu    sync.Mutex
	cancels      jetstream.Stream
	cancelsCut   bool
	// heardFrom is the calls stream's last sequence when the worker
	// began hearing cancels, or heard them again after a reconnect
	// (heardAt: the connection's reconnects then): a call stored up to
	// it may have been cancelled before (unheard). rehearing makes one
	// reading per reconnect.
	heardFrom atomic.Uint64
	heardAt   atomic.Uint64
	rehearing sync.Mutex
	// cancelsFailed is when a lookup of cancels last failed (unix ns):
	// the lookups run in turn on the pull loops, so for cancelsPause after
	// one none is made, and a stream without a leader costs one
	// lookup's wait, not every queued call's.
	cancelsFailed atomic.Int64
	// checkedAt is the connection's reconnects when the cancels of the
	// durable calls running here were last looked up (recheck); checking
	// is set while a lookup runs.
	checkedAt atomic.Uint64
	checking  atomic.Bool
	rechecked time.Time // the clock's last look (recheck); the clock's goroutine only
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup

	mu    sync.Mutex
	loops map[string]*puller // tool → its pull loop
	live  map[*puller]bool   // the loops running, also those of tools removed

	// The max-deliveries advisories: taken from the exhausted stream
	// (exhaustedCC), or, where it cannot be had, heard on a queue
	// subscription (exhausted).
	exhausted   *nats.Subscription
	exhaustedCC jetstream.ConsumeContext
	// exhaustSlots holds a token per advisory being handled
	// (exhaustedBatch at most).
	exhaustSlots chan struct{}
	// retryAfter is exhaustedRetry; tests shorten it. beforeExhaust,
	// when set (tests, under mu, before the advisory is taken), runs
	// before an advisory's call is read; its error fails the handling.
	retryAfter    time.Duration
	beforeExhaust func(seq uint64) error
	// sweeping is set while a sweep of the calls stream for exhausted
	// calls is due or runs (sweepSoon); sweepDue, when another is due
	// after it. sweepAfter, sweepMax and sweepRead are sweepWait,
	// sweepWaitMax and sweepReadWait; tests shorten them.
	sweeping   atomic.Bool
	sweepDue   atomic.Bool
	sweepAfter time.Duration
	sweepMax   time.Duration
	sweepRead  time.Duration

	run runners // the goroutines the pulled calls run on
}

// runners run pulled calls: a runner that finished a call waits for the
// next (while fewer than idleRunners wait) instead of ending, so a call
// seldom starts on a new goroutine, whose small stack the call path
// grows by copying (a twentieth of a durable echo call's CPU).
type runners struct {
	next chan *sender  // unbuffered: a send succeeds only to a waiting runner
	idle atomic.Int32  // runners waiting on next
	done chan struct{} // closed at stop: waiting runners end
}

// idleRunners bounds the runners that wait for calls.
const idleRunners = 16

// start runs s on a waiting runner, or on a new one.
func (r *runners) start(s *sender) {
	select {
	case r.next <- s:
	default:
		go r.loop(s)
	}
}

func (r *runners) loop(s *sender) {
	for {
		s.run()
		if r.idle.Add(1) > idleRunners {
			r.idle.Add(-1)
			return
		}
		select {
		case s = <-r.next:
			r.idle.Add(-1)
		case <-r.done:
			return
		}
	}
}

// startDurable creates (or binds) the calls stream.
func startDurable(ctx context.Context, w *Worker, opts *DurableOptions) (*durablePath, error) {
	if opts.JetStream == nil {
		return nil, errors.New("bus: DurableOptions.JetStream is required")
	}
	o := opts.withDefaults()
	if o.Replicas > 5 {
		return nil, fmt.Errorf("bus: the calls stream: replicas must be 1 to 5, got %d", o.Replicas)
	}
	st, err := bindStream(ctx, o.JetStream, CallsStreamConfig(o.Dedup, o.Replicas), func(err error) {
		w.log.Warn("bus: the servers have no room to reserve the calls stream's bound in bytes; it is made bounded in calls only",
			"stream", wire.StreamCalls, "max_bytes", CallsMaxBytes, "max_msgs", CallsMaxCalls, "err", err)
	})
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return nil, errors.New("bus: the durable path needs JetStream, which this NATS server does not have")
	}
	if err != nil {
		return nil, fmt.Errorf("bus: the calls stream: %w", err)
	}
	d := &durablePath{w: w, o: o, js: o.JetStream, stream: st, loops: map[string]*puller{}, live: map[*puller]bool{},
		run:          runners{next: make(chan *sender), done: make(chan struct{})},
		exhaustSlots: make(chan struct{}, exhaustedBatch), retryAfter: exhaustedRetry,
		sweepAfter: sweepWait, sweepMax: sweepWaitMax, sweepRead: sweepReadWait,
		cancelsBound: make(chan struct{})}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.checkedAt.Store(w.nc.Stats().Reconnects)
	d.wg.Add(1) // nothing can stop d yet
	go func() {
		defer d.wg.Done()
		d.bindCancels()
	}()
	w.clock.dur.Store(d)
	return d, nil
}

// bindCancels binds (or creates) the cancels stream, in the background:
// the worker takes calls meanwhile. Only a call queued before the worker
// heard cancels (unheard) needs the stream, to look its cancel up; such a
// call waits for the bind (cancelsStream), and every other call's cancel
// the worker hears. Bounded apart (streamsBindWait): a worker key of an
// older role set is refused the stream, which the server says only to the
// connection's error handler, and the request would wait for its
// context. A stop ends the bind.
func (d *durablePath) bindCancels() {
	defer close(d.cancelsBound)
	ctx, cancel := context.WithTimeout(d.ctx, streamBindWait())
	defer cancel()
	cs, err := bindStream(ctx, d.js, CancelsStreamConfig(d.o.Replicas), nil)
	d.cancelsMu.Lock()
	defer d.cancelsMu.Unlock()
	switch {
	case err == nil:
		d.cancels = cs
		d.dropsOldest(cs)
	case d.ctx.Err() != nil:
		d.cancelsCut = true
	default:
		d.w.log.Warn("bus: without the cancels stream, a durable call cancelled before this worker heard cancels may run", "stream", wire.StreamCancels, "err", err)
	}
}

// dropsOldest warns of a cancels stream, made by an earlier build, that
// drops its oldest records when full: one caller's records can push out
// another's (CancelsStreamConfig).
func (d *durablePath) dropsOldest(cs jetstream.Stream) {
	if cs.CachedInfo().Config.Discard != jetstream.DiscardNew {
		d.w.log.Warn("bus: the cancels stream drops its oldest records when full, so one caller's records can push out another's and a durable call cancelled while queued may then run; make it refuse new ones: nats stream edit "+wire.StreamCancels+" --discard new", "stream", wire.StreamCancels)
	}
}

// cancelsStream is the cancels stream, once its bind at start has ended;
// nil when it could not be bound. A bind a stop ended is made here, for
// the calls of the batches a stopping worker's pull loops still hold,
// within streamsBindWait and not bounded by the stop, as the lookups are
// not (cancelledKey).
func (d *durablePath) cancelsStream() jetstream.Stream {
	<-d.cancelsBound
	d.cancelsMu.Lock()
	defer d.cancelsMu.Unlock()
	if d.cancelsCut {
		d.cancelsCut = false
		ctx, cancel := context.WithTimeout(context.Background(), streamBindWait())
		defer cancel()
		cs, err := bindStream(ctx, d.js, CancelsStreamConfig(d.o.Replicas), nil)
		if err != nil {
			d.w.log.Warn("bus: without the cancels stream, a durable call cancelled before this worker heard cancels may run", "stream", wire.StreamCancels, "err", err)
		}
		d.cancels = cs
	}
	return d.cancels
}

// withoutCancels reports, without waiting, that the worker is without the
// cancels stream for good: its bind ended and could not bind it.
func (d *durablePath) withoutCancels() bool {
	select {
	case <-d.cancelsBound:
	default:
		return false
	}
	d.cancelsMu.Lock()
	defer d.cancelsMu.Unlock()
	return d.cancels == nil && !d.cancelsCut
}

// bindStream binds the stream of cfg as it is, creating it with cfg when
// it does not exist yet (another worker may create it meanwhile).
// A cluster without a leader for the moment (kv.Retry) is waited out
// within ctx. With unreserved set, a stream the servers refuse for want
// of room to reserve its MaxBytes (JetStream reserves it from the store
// when the stream is made: a small disk, max_file_store, an account's
// limit) is made without that bound, and unreserved is told why.
func bindStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, unreserved func(error)) (jetstream.Stream, error) {
	return kv.Retry(ctx, js, func(ctx context.Context) (jetstream.Stream, error) {
		st, err := js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			st, err = js.CreateStream(ctx, cfg)
			if unreserved != nil && cfg.MaxBytes > 0 && noRoom(err) {
				why := err
				c := cfg
				c.MaxBytes = -1
				if st, err = js.CreateStream(ctx, c); err == nil {
					unreserved(why)
				}
			}
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				st, err = js.Stream(ctx, cfg.Name)
			}
		}
		return st, err
	})
}

// noRoom reports whether err is a stream's creation refused because its
// MaxBytes cannot be reserved: on this server or account
// (JSStorageResourcesExceededErr), or on enough peers of a cluster
// (JSClusterNoPeersErrF, "insufficient storage").
func noRoom(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == errCodeStorageExceeded ||
		apiErr.ErrorCode == errCodeNoPeers && strings.Contains(apiErr.Description, "insufficient storage"))
}

// errCodeStorageExceeded and errCodeNoPeers are JetStream's error codes
// for a stream refused for want of storage (JSStorageResourcesExceededErr)
// and for want of peers to place it on (JSClusterNoPeersErrF).
const (
	errCodeStorageExceeded jetstream.ErrorCode = 10047
	errCodeNoPeers         jetstream.ErrorCode = 10005
)

// sync runs a pull loop for exactly the tools served.
func (d *durablePath) sync(tools []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() != nil {
		return
	}
	for tool, p := range d.loops {
		if !slices.Contains(tools, tool) {
			p.cancel()
			delete(d.loops, tool)
		}
	}
	for _, tool := range tools {
		if _, ok := d.loops[tool]; ok {
			continue
		}
		p := &puller{d: d, tool: tool, bound: make(chan struct{})}
		if t, ok := d.w.tk.Get(tool); ok {
			p.repeatable = t.ReadOnly() || t.Idempotency().Retryable()
		}
		p.ctx, p.cancel = context.WithCancel(d.ctx)
		d.loops[tool] = p
		d.live[p] = true
		d.wg.Add(1)
		go p.loop(nil, nil)
	}
}

// stop ends the pull loops (a fetch in progress ends within a second)
// and waits for them; calls already taken run on, and their runners end
// after them.
func (d *durablePath) stop() {
	d.mu.Lock()
	d.cancel()
	cc, sub := d.exhaustedCC, d.exhausted
	d.mu.Unlock()
	if sub != nil {
		sub.Unsubscribe()
	}
	if cc != nil {
		d.closeExhausted(cc)
	}
	d.wg.Wait()
	close(d.run.done)
}

// closeExhausted ends the taking of the exhausted stream's advisories
// and waits for it, at most stopFlushTimeout: its subscription goes on
// its own goroutine, waited for so that a stopped worker leaves the
// connection as it found it. Drained, not stopped: the advisories pulled
// and not yet handled are handed back (takeExhausted), not left for
// exhaustedAckWait. Cut off from NATS, a drain waits for pulls no server
// ends: it is stopped then (what it held is taken again after
// exhaustedAckWait).
func (d *durablePath) closeExhausted(cc jetstream.ConsumeContext) {
	if d.w.nc.IsConnected() {
		cc.Drain()
	} else {
		cc.Stop()
	}
	select {
	case <-cc.Closed():
	case <-time.After(stopFlushTimeout):
		cc.Stop()
		d.w.log.Warn("bus: the exhausted stream's consumer did not close within the stop's bound", "stream", wire.StreamExhausted, "wait", stopFlushTimeout)
	}
}

// advisoryMaxDeliveries is where JetStream says a call of the calls
// stream was delivered MaxDeliver times without being acknowledged; the
// last token is the consumer (the tool).
const advisoryMaxDeliveries = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + wire.StreamCalls + ".*"

// exhaustedQueue is the queue group in which one worker answers each
// exhausted call where the exhausted stream cannot be had, and the name
// of the exhausted stream's consumer, shared by the fleet.
const exhaustedQueue = "toolbus-exhausted"

// ExhaustedStreamConfig is the exhausted stream as whoever creates it
// first creates it: the calls stream's max-deliveries advisories, each
// kept until a worker has answered its call (a work queue), as long as a
// call waits in the calls stream at most, bounded in count and bytes (the
// oldest dropped first: their callers end them worker_lost on their own).
// JetStream publishes an advisory once, when the call's deliveries run
// out, also while no worker listens (the fleet restarting): kept here,
// it is answered by the next worker up.
func ExhaustedStreamConfig(replicas int) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        wire.StreamExhausted,
		Description: "toolbus: durable calls whose deliveries ran out, until a worker has answered them",
		Subjects:    []string{advisoryMaxDeliveries},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		MaxAge:      callsMaxAge,
		MaxMsgs:     1 << 16,
		MaxBytes:    64 << 20,
		Discard:     jetstream.DiscardOld,
	}
}

// exhaustedAckWait is how long a worker has to answer an exhausted call
// (read it, read its kept final, keep its own, remove it) before another
// worker takes the advisory; the worker tells JetStream it is in
// progress as it begins, so the time it waited for a slot
// (exhaustedBatch) does not count. An advisory is delivered until it is
// answered, however many times (the stream's MaxAge, a day, bounds it):
// one whose handling failed (the calls stream's leader away, the results
// bucket's) is taken again after exhaustedRetry, doubled with each
// delivery up to exhaustedRetryMax, and one a stopping worker holds is
// handed back after exhaustedHandBack, for another worker. (It was
// delivered at most 5 times, a second apart: a stream leader away half a
// minute, or workers stopping while they held it, left its call
// unanswered in the calls stream for a day.)
const (
	exhaustedAckWait  = time.Minute
	exhaustedRetry    = time.Second
	exhaustedRetryMax = time.Minute
	exhaustedHandBack = 100 * time.Millisecond
)

// exhaustedDelay is how long after its nth delivery failed an advisory
// is delivered again, first being the delay after the first.
func exhaustedDelay(first time.Duration, n uint64) time.Duration {
	d := first
	for ; n > 1 && d < exhaustedRetryMax; n-- {
		d *= 2
	}
	return min(d, exhaustedRetryMax)
}

// exhaustedBatch bounds the advisories a worker handles at once, and
// pulls at once, so that the fleet shares a burst of them. They are
// handled side by side: one after another, the last of a batch on a slow
// stream waited past exhaustedAckWait and was delivered to a second
// worker too.
const exhaustedBatch = 16

// watchExhausted answers the calls whose deliveries ran out. JetStream
// stops delivering such a call but nobody has told its caller: the last
// worker died before it could. One worker of the fleet answers it
// worker_lost (unless its final was kept: then the call did end) and
// removes it from the queue. The advisories are taken from the exhausted
// stream; a worker that cannot bind it (a role set written before it)
// hears them on a queue subscription, and misses those published while
// it is down.
//
// The binding runs in the background (counted in d.wg, ended by stop):
// the worker takes calls meanwhile. An advisory waits in the stream for
// a consumer however late it binds; only a worker that cannot bind it,
// whose bind waits out streamsBindWait, misses those published meanwhile
// that no other worker takes, as it would while down.
func (d *durablePath) watchExhausted() {
	if !d.begin() {
		return
	}
	go func() {
		defer d.wg.Done()
		d.bindExhausted()
	}()
}

// bindExhausted binds the exhausted stream (consumeExhausted), or where
// that fails, unless the worker stops meanwhile, subscribes to the
// advisories on core NATS.
func (d *durablePath) bindExhausted() {
	ctx, cancel := context.WithTimeout(d.ctx, streamBindWait())
	defer cancel()
	err := d.consumeExhausted(ctx)
	if err == nil || d.ctx.Err() != nil {
		return
	}
	d.w.log.Warn("bus: without the exhausted stream, a durable call whose deliveries run out while no worker is up stays unanswered in the calls stream", "stream", wire.StreamExhausted, "err", err)
	sub, err := d.w.nc.QueueSubscribe(advisoryMaxDeliveries, exhaustedQueue, func(m *nats.Msg) {
		if !d.begin() {
			return
		}
		defer d.wg.Done()
		if adv, ok := d.advisory(m.Data); ok {
			d.exhaust(adv.Consumer, adv.StreamSeq, adv.Deliveries)
		} else {
			d.w.log.Warn("bus: ignoring a malformed max-deliveries advisory", "subject", m.Subject)
		}
	})
	if err != nil {
		d.w.log.Error("bus: subscribing to the calls stream's advisories; a durable call whose deliveries run out is not answered by this worker", "err", err)
		return
	}
	d.w.drops.watch(DroppedReplies, sub)
	d.mu.Lock()
	stopped := d.ctx.Err() != nil
	if !stopped {
		d.exhausted = sub
	}
	d.mu.Unlock()
	if stopped {
		sub.Unsubscribe()
	}
}

// consumeExhausted binds the exhausted stream and its consumer, and
// takes their advisories, exhaustedBatch at once, each on a goroutine of
// its own (takeExhausted). A consumer made before with other settings (an
// earlier build's MaxDeliver 5) is updated to these. When JetStream ends
// the taking (the consumer or the stream was deleted), they are bound
// again (rebindExhausted).
func (d *durablePath) consumeExhausted(ctx context.Context) error {
	st, err := bindStream(ctx, d.js, ExhaustedStreamConfig(d.o.Replicas), func(err error) {
		d.w.log.Warn("bus: the servers have no room to reserve the exhausted stream's bound in bytes; it is made bounded in count only", "stream", wire.StreamExhausted, "err", err)
	})
	if err != nil {
		return err
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:           exhaustedQueue,
		Description:       "toolbus: the workers answering exhausted durable calls",
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           exhaustedAckWait,
		MaxDeliver:        -1, // until answered (exhaustedAckWait)
		MaxAckPending:     -1,
		InactiveThreshold: callsMaxAge,
	})
	if err != nil {
		return err
	}
	var ended sync.Once
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if !d.begin() {
			_ = m.NakWithDelay(exhaustedHandBack) // stopping: for another worker
			return
		}
		select {
		case d.exhaustSlots <- struct{}{}:
		case <-d.ctx.Done():
			_ = m.NakWithDelay(exhaustedHandBack)
			d.wg.Done()
			return
		}
		go func() {
			defer d.wg.Done()
			defer func() { <-d.exhaustSlots }()
			d.takeExhausted(m)
		}()
	}, jetstream.PullMaxMessages(exhaustedBatch), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		if !errors.Is(err, jetstream.ErrConsumerDeleted) && !errors.Is(err, jetstream.ErrBadRequest) {
			d.w.log.Debug("bus: taking exhausted durable calls", "stream", wire.StreamExhausted, "err", err)
			return
		}
		// The errors that end the taking (jetstream's handleStatusMsg).
		ended.Do(d.rebindExhausted)
	}))
	if err != nil {
		return err
	}
	d.mu.Lock()
	stopped := d.ctx.Err() != nil
	if !stopped {
		d.exhaustedCC = cc
	}
	d.mu.Unlock()
	if stopped { // stop has run meanwhile (a late bind): not left taking
		d.closeExhausted(cc)
	}
	return nil
}

// takeExhausted handles an advisory taken from the exhausted stream:
// acknowledged once its call is answered (or was already), delivered
// again later when that failed (exhaustedDelay), handed back to another
// worker when this one stops.
func (d *durablePath) takeExhausted(m jetstream.Msg) {
	adv, ok := d.advisory(m.Data())
	if !ok {
		_ = m.Term()
		d.sweepSoon(m.Subject())
		return
	}
	// Its AckWait counted from its delivery, also while it waited for a
	// slot; exhaust is bounded well within it (5 s).
	_ = m.InProgress()
	var err error
	if hook := d.beforeExhaust; hook != nil {
		err = hook(adv.StreamSeq)
	}
	if err == nil {
		err = d.exhaust(adv.Consumer, adv.StreamSeq, adv.Deliveries)
	}
	switch {
	case err == nil:
		_ = m.Ack()
	case d.ctx.Err() != nil:
		_ = m.NakWithDelay(exhaustedHandBack)
	default:
		n := uint64(1)
		if md, merr := m.Metadata(); merr == nil {
			n = md.NumDelivered
		}
		_ = m.NakWithDelay(exhaustedDelay(d.retryAfter, n))
	}
}

// rebindExhausted binds the exhausted stream and its consumer again,
// after JetStream ended their taking, until it succeeds or the worker
// stops.
func (d *durablePath) rebindExhausted() {
	if !d.begin() {
		return
	}
	d.w.log.Warn("bus: the exhausted stream's consumer is gone; binding it again", "stream", wire.StreamExhausted, "consumer", exhaustedQueue)
	go func() {
		defer d.wg.Done()
		for wait := time.Second; ; wait = min(2*wait, exhaustedAckWait) {
			select {
			case <-d.ctx.Done():
				return
			case <-time.After(wait):
			}
			ctx, cancel := context.WithTimeout(d.ctx, streamBindWait())
			err := d.consumeExhausted(ctx)
			cancel()
			if err == nil {
				return
			}
			if d.ctx.Err() == nil {
				d.w.log.Warn("bus: binding the exhausted stream again", "stream", wire.StreamExhausted, "err", err, "retry_in", wait)
			}
		}
	}()
}

// begin counts an advisory's handling in d.wg, which stop waits for;
// false once the worker stops.
func (d *durablePath) begin() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx.Err() != nil {
		return false
	}
	d.wg.Add(1)
	return true
}

// maxDeliveries is a max-deliveries advisory: the call at StreamSeq of
// the calls stream, delivered Deliveries times to Consumer (its tool).
type maxDeliveries struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// advisory decodes a max-deliveries advisory; false for one that is not
// of the calls stream's.
func (d *durablePath) advisory(data []byte) (maxDeliveries, bool) {
	var adv maxDeliveries
	if err := json.Unmarshal(data, &adv); err != nil || adv.Stream != wire.StreamCalls || adv.StreamSeq == 0 {
		return adv, false
	}
	return adv, true
}

// sweepWait is how long after a message in the exhausted stream that is
// no advisory a worker sweeps the calls stream (sweepSoon), and the
// least time between its sweeps while such messages keep coming.
// sweepWaitMax is the most time between two looks at a tool whose
// consumer or calls could not be read: the wait doubles from sweepWait
// with each failed look, up to it. sweepReadWait bounds one read.
const (
	sweepWait     = time.Second
	sweepWaitMax  = time.Minute
	sweepReadWait = 5 * time.Second
)

// sweepHeld is why a sweep left a tool to be looked at again: calls in
// progress (looked at each sweepWait) or a failed read (sweepUnread,
// looked at after wait, which doubles with each failed look), and when.
type sweepHeld struct {
	why  string
	wait time.Duration
	next time.Time
}

// The reasons of sweepHeld.
const (
	sweepBusy   = "busy"
	sweepUnread = "unread"
)

// sweepSoon sweeps the calls stream for exhausted calls (sweepExhausted)
// sweepWait after a message taken from the exhausted stream that is no
// max-deliveries advisory, and again while more come. NATS does not check
// a request's reply subject, so any caller can have the server publish
// its answers on the advisory subject, which the exhausted stream keeps,
// the oldest dropped first: such a flood pushes real advisories out, and
// their calls are then found only in the calls stream. One sweep at a
// time, and a warning per sweep, not per message.
func (d *durablePath) sweepSoon(subject string) {
	d.sweepDue.Store(true)
	if !d.sweeping.CompareAndSwap(false, true) {
		return
	}
	if !d.begin() {
		d.sweeping.Store(false)
		return
	}
	d.w.log.Warn("bus: the exhausted stream holds messages that are no max-deliveries advisory (a server's answers a caller had sent there), which may have pushed real ones out; looking for exhausted durable calls in the calls stream", "subject", subject)
	go func() {
		defer d.wg.Done()
		// The tools left for later (calls in progress, a failed read):
		// looked at again when their time comes, without new messages
		// too, until each is swept.
		var held map[string]*sweepHeld
		for due := d.sweepDue.Swap(false); due || len(held) > 0; due = d.sweepDue.Swap(false) {
			select {
			case <-d.ctx.Done():
				d.sweeping.Store(false)
				return
			case <-time.After(d.sweepAfter):
			}
			held = d.sweepExhausted(due || d.sweepDue.Load(), held)
		}
		d.sweeping.Store(false)
		if d.sweepDue.Load() { // came after the last look
			d.sweepSoon(subject)
		}
	}()
}

// sweepExhausted answers the exhausted calls of the tools this worker
// pulls as their advisories would have (exhaust): every tool with all,
// else only those held, each held one once its time has come. A call
// still in the calls stream that its tool's consumer has delivered is
// either awaiting its acknowledgement or exhausted; JetStream lists
// neither, so a tool is swept only while none of its calls awaits one
// (its consumer's NumAckPending is 0): every delivered call then left in
// the stream is exhausted (an acknowledged or settled one is removed).
// It returns the tools held for later: those with calls in progress,
// looked at again at the next sweep, and those whose consumer or calls
// could not be read, looked at again after a wait that doubles with each
// failed look, up to sweepMax, for as long as the tool is pulled here.
// Each change of a tool's state is logged once: held for calls in
// progress, held for a failed read, swept after it was held. A tool no
// live worker pulls keeps what the flood hid from it: its callers end
// those calls worker_lost after their stall timeout.
func (d *durablePath) sweepExhausted(all bool, held map[string]*sweepHeld) map[string]*sweepHeld {
	now := time.Now()
	still := map[string]*sweepHeld{}
	d.mu.Lock()
	tools := make([]string, 0, len(d.loops))
	for tool := range d.loops {
		switch h := held[tool]; {
		case h != nil && now.Before(h.next):
			still[tool] = h // not yet: its wait runs
		case all || h != nil:
			tools = append(tools, tool)
		}
	}
	d.mu.Unlock()
	hold := func(tool, why string, args ...any) {
		h := held[tool]
		if h == nil || h.why != why {
			h = &sweepHeld{why: why, wait: d.sweepAfter}
			if why == sweepBusy {
				d.w.log.Warn("bus: not looking for a durable tool's exhausted calls while some of its calls are in progress; looking again each second until none is", append([]any{"tool", tool}, args...)...)
			} else {
				d.w.log.Warn("bus: reading a durable tool's consumer or calls to find its exhausted calls; looking again, at waits doubling up to a minute, until they are read", append([]any{"tool", tool}, args...)...)
			}
		} else if why == sweepUnread {
			h = &sweepHeld{why: why, wait: min(2*h.wait, d.sweepMax)}
		}
		h.next = time.Now().Add(h.wait)
		still[tool] = h
	}
	for _, tool := range tools {
		if d.ctx.Err() != nil {
			return nil
		}
		switch why, args := d.sweepTool(tool); {
		case why != "":
			hold(tool, why, args...)
		case held[tool] != nil:
			d.w.log.Info("bus: looked again for the exhausted calls of a durable tool left for later: read, and any found answered", "tool", tool)
		}
	}
	return still
}

// sweepTool answers the exhausted calls of tool (sweepExhausted). It
// returns why the tool is to be looked at again, with what to log of it:
// "" when it was swept, or when it has no consumer.
func (d *durablePath) sweepTool(tool string) (string, []any) {
	ctx, cancel := context.WithTimeout(d.ctx, d.sweepRead)
	cons, err := d.stream.Consumer(ctx, tool)
	cancel()
	if err != nil {
		if !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return sweepUnread, []any{"err", err}
		}
		return "", nil
	}
	info := cons.CachedInfo()
	last, n := info.Delivered.Stream, info.Config.MaxDeliver
	if last == 0 || n <= 0 {
		return "", nil
	}
	if info.NumAckPending > 0 {
		return sweepBusy, []any{"in_progress", info.NumAckPending}
	}
	var failed error
	for _, subject := range []string{wire.DurableSubject(tool, ""), wire.DurableSubject(tool, "*")} {
		for seq := uint64(1); seq <= last && d.ctx.Err() == nil; {
			ctx, cancel := context.WithTimeout(d.ctx, d.sweepRead)
			raw, err := d.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
			cancel()
			if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				failed = err
			}
			if err != nil || raw.Sequence > last {
				break
			}
			if err := d.exhaust(tool, raw.Sequence, uint64(n)); err != nil {
				failed = err
			}
			seq = raw.Sequence + 1
		}
	}
	if failed != nil {
		return sweepUnread, []any{"err", failed}
	}
	return "", nil
}

// exhaust ends the call at seq, delivered n times, with worker_lost. An
// error says the call could not be read or removed: it is to be tried
// again (a kept final, once it is kept, says the call was answered).
func (d *durablePath) exhaust(tool string, seq, n uint64) (err error) {
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
	defer cancel()
	raw, err := d.stream.GetMsg(ctx, seq)
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil // acknowledged (answered) meanwhile, or gone (with the stream)
		}
		d.w.count.jsErrors.Add(1)
		d.w.log.Warn("bus: reading an exhausted durable call", "tool", tool, "seq", seq, "err", err)
		return err
	}
	defer func() {
		if derr := d.stream.DeleteMsg(ctx, seq); derr != nil && !errors.Is(derr, jetstream.ErrMsgNotFound) && !errors.Is(derr, jetstream.ErrStreamNotFound) {
			d.w.count.jsErrors.Add(1)
			d.w.log.Warn("bus: removing an exhausted durable call", "tool", tool, "seq", seq, "err", derr)
			err = derr
		}
	}()
	_, identity, _ := strings.Cut(strings.TrimPrefix(raw.Subject, wire.SubjectDurablePrefix), ".")
	in := &incoming{subject: raw.Subject, tool: tool, identity: identity, reply: raw.Header.Get(wire.HeaderReply), header: raw.Header, data: raw.Data}
	c := wire.CodecOf(raw.Header)
	var req wire.Request
	if err := c.Unmarshal(raw.Data, &req); err != nil || !wire.ValidCallID(req.ID) || !d.w.answerable(in, req.ID, "exhausted") {
		return nil
	}
	switch ended, err := d.w.ended(ctx, callKey(identity, req.ID)); {
	case ended:
		return nil // its final was sent and kept; only the acknowledgement was lost
	case err != nil:
		// Whether it ended cannot be told: a worker_lost kept over its
		// final would replace what its caller got. Nothing is answered:
		// a caller that heard nothing on its last delivery ends the call
		// worker_lost itself.
		d.w.count.jsErrors.Add(1)
		d.w.log.Warn("bus: reading the kept final of an exhausted durable call; removing it unanswered", "tool", tool, "call", req.ID, "err", err)
		return nil
	}
	resp := d.w.finalFor(req.ID, toolkit.CodeWorkerLost, fmt.Sprintf(
		"WorkerLostError: the call of '%s' was delivered %d times and each time its worker was lost before it answered; it is not delivered again. It may or may not have taken effect.",
		tool, n))
	resp.Metadata[wire.MetaAttempts] = n
	// The last delivery's number: the caller reads the final as of it.
	// replyFinal keeps the final.
	in.dur = &delivery{attempt: n, max: n, redeliver: d.o.AckWait}
	d.w.replyFinal(in, c, resp, req.Session)
	return nil
}

// consumer binds the tool's consumer, creating it when missing.
func (d *durablePath) consumer(ctx context.Context, tool string) (jetstream.Consumer, error) {
	c, err := d.stream.Consumer(ctx, tool)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		c, err = d.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:        tool,
			Description:    "toolbus: durable calls of " + tool,
			FilterSubjects: []string{wire.DurableSubject(tool, ""), wire.DurableSubject(tool, "*")},
			AckPolicy:      jetstream.AckExplicitPolicy,
			AckWait:        d.o.AckWait,
			MaxDeliver:     d.o.MaxDeliver,
			MaxAckPending:  -1,
			// Unused this long, it is deleted (ConsumerIdle).
			InactiveThreshold: d.o.ConsumerIdle,
		})
		if errors.Is(err, jetstream.ErrConsumerExists) {
			c, err = d.stream.Consumer(ctx, tool)
		}
	}
	return c, err
}

// waitBound waits, at most bindWait, until the pull loops of the tools
// served now have bound their consumers: a client's durable call of a
// tool without a consumer is answered not_found (Client.unserved), so
// Serve returns once its tools have theirs, as it returns once its
// subscriptions are in place. Loops that could not bind yet go on trying.
func (d *durablePath) waitBound(ctx context.Context) {
	d.mu.Lock()
	loops := make([]*puller, 0, len(d.loops))
	for _, p := range d.loops {
		loops = append(loops, p)
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, bindWait)
	defer cancel()
	for _, p := range loops {
		select {
		case <-p.bound:
		case <-ctx.Done():
			d.w.log.Warn("bus: serving before every durable tool's consumer is bound; until it is, durable calls of the tool may be answered not_found", "tool", p.tool)
			return
		}
	}
}

// bindWait bounds how long Serve waits for its tools' consumers.
const bindWait = 5 * time.Second

// fetchWait bounds one pull; a stop waits for it at most that long.
const fetchWait = time.Second

// puller is one tool's pull loop. A quick tool's call runs on the loop
// itself, as a quick core call runs on the leading reader: a batch of
// calls is answered without a hand-off to another goroutine per call. A
// call that runs there for inlineLimit is caught by the clock
// (watchInline), which hands the loop, with the rest of its batch, on to
// a new goroutine (the calls behind it waited at most inlineLimit plus a
// clock tick) and marks the tool slow for a while.
type puller struct {
	d          *durablePath
	tool       string
	repeatable bool // the tool is read-only or idempotent
	ctx        context.Context
	cancel     context.CancelFunc
	// bound is closed once the loop has bound (or made) the tool's
	// consumer, or has ended without.
	bound     chan struct{}
	boundOnce sync.Once

	// While a call runs on the loop: the call, and what the loop goes on
	// with should the clock hand it on (written before inline is set).
	inline inlined
	cons   jetstream.Consumer
	batch  *pullBatch
}

// loop pulls the tool's calls while the worker has room for them, after
// taking what is left of batch (a loop handed on). It holds one count of
// d.wg, which a goroutine that loses the loop to the clock leaves to the
// loop's next goroutine.
func (p *puller) loop(cons jetstream.Consumer, batch *pullBatch) {
	d := p.d
	wait := 100 * time.Millisecond
	for {
		if batch != nil {
			info := cons.CachedInfo().Config
			for m := range batch.Messages() {
				if !p.take(cons, batch, m, info) {
					return // handed on while a call ran here
				}
			}
			err := batch.Error()
			batch = nil
			if err != nil && p.ctx.Err() == nil {
				// The pull failed after it was sent: above all, the
				// consumer is gone (deleted idle while every slot was
				// busy with other calls, or by hand), which every pull
				// after would find again at once. Bind it again,
				// making it if it is missing.
				d.w.count.jsErrors.Add(1)
				d.w.log.Warn("bus: pulling durable calls; binding the consumer again", "tool", p.tool, "err", err)
				cons = nil
				sleepCtx(p.ctx, wait)
				continue
			}
		}
		if p.ctx.Err() != nil {
			p.boundOnce.Do(func() { close(p.bound) })
			d.mu.Lock()
			delete(d.live, p)
			d.mu.Unlock()
			d.wg.Done()
			return
		}
		if cons == nil {
			var err error
			if cons, err = d.consumer(p.ctx, p.tool); err != nil {
				if p.ctx.Err() == nil {
					d.w.count.jsErrors.Add(1)
					d.w.log.Warn("bus: binding the durable consumer; retrying", "tool", p.tool, "err", err, "in", wait)
				}
				sleepCtx(p.ctx, wait)
				wait = min(2*wait, 5*time.Second)
				continue
			}
			wait = 100 * time.Millisecond
			p.boundOnce.Do(func() { close(p.bound) })
			info := cons.CachedInfo()
			d.w.log.Debug("bus: pulling durable calls", "tool", p.tool, "ack_wait", info.Config.AckWait, "max_deliver", info.Config.MaxDeliver)
		}
		free := d.w.opts.MaxInFlight - len(d.w.slots)
		if free <= 0 {
			sleepCtx(p.ctx, 2*time.Millisecond)
			continue
		}
		var err error
		if batch, err = pull(d.js, cons, min(free, 64), fetchWait); err != nil {
			batch = nil
			if p.ctx.Err() == nil && !errors.Is(err, nats.ErrConnectionClosed) {
				d.w.count.jsErrors.Add(1)
				d.w.log.Warn("bus: pulling durable calls", "tool", p.tool, "err", err)
				cons = nil
				sleepCtx(p.ctx, wait)
			}
		}
	}
}

// take hands one delivered call to the worker: it runs on the loop when
// its tool is quick and a slot is free, else on a runner. It reports
// false when the clock handed the loop on while the call ran here.
func (p *puller) take(cons jetstream.Consumer, batch *pullBatch, m *nats.Msg, cfg jetstream.ConsumerConfig) bool {
	d := p.d
	meta, err := m.Metadata()
	if err != nil {
		d.w.log.Warn("bus: a durable call without metadata", "tool", p.tool, "err", err)
		m.Term()
		return true
	}
	if why := notACall(m.Header); why != "" {
		d.w.log.Warn("bus: dropping a message of the calls stream that is not a durable call (a server's answer stored there as another request's reply); ending it in the stream",
			"subject", m.Subject, "seq", meta.Sequence.Stream, "reason", why)
		m.Term()
		return true
	}
	_, identity, _ := strings.Cut(strings.TrimPrefix(m.Subject, wire.SubjectDurablePrefix), ".")
	in := &incoming{subject: m.Subject, tool: p.tool, identity: identity, reply: m.Header.Get(wire.HeaderReply),
		header: m.Header, data: m.Data,
		dur: &delivery{msg: m, repeatable: p.repeatable, attempt: meta.NumDelivered, max: uint64(max(cfg.MaxDeliver, 0)), redeliver: cfg.AckWait,
			published: meta.Timestamp, seq: meta.Sequence.Stream}}
	switch s := d.w.accept(in); {
	case s == nil:
		return true
	case !d.w.quickSlot(s):
		d.run.start(s) // it waits for its slot there
		return true
	default:
		p.cons, p.batch = cons, batch
		return p.inline.run(s)
	}
}

// notACall reports why a message of the calls stream is no caller's
// durable call, or "". NATS does not check a request's reply subject, so
// any client may have the server answer a request of its own (an API
// response, a publish's acknowledgement, a direct get's copy of a
// message it may read) on another identity's durable subject, where the
// stream stores it. A caller's durable call names its reply subject
// (wire.HeaderReply); the server's answers carry none, and a copy of a
// stored message carries the server's headers. A few map lookups: every
// durable call passes here.
func notACall(h nats.Header) string {
	if h.Get(wire.HeaderReply) == "" {
		return "no " + wire.HeaderReply + " header"
	}
	for _, k := range [...]string{"Status", jetstream.StreamHeader, jetstream.SubjectHeader, jetstream.SequenceHeader, jetstream.TimeStampHeaer} {
		if _, ok := h[k]; ok {
			return "the server's header " + k
		}
	}
	return ""
}

// watchInline is the clock's look at the pull loops (also those of
// tools removed, which end after their batch): one that has run a call
// for inlineLimit goes on on a new goroutine, and the call's tool runs on
// runners for a while.
func (d *durablePath) watchInline(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range d.live {
		if p.inline.overdue(now) {
			go p.loop(p.cons, p.batch)
		}
	}
}

// errNoJetStream: the durable path needs JetStream, and the server has none.
var errNoJetStream = errors.New("the durable path needs JetStream, which this NATS server does not run")

// queueCall publishes a durable call into the calls stream and waits for
// the stream's acknowledgement, publishing again with the same message id
// (the stream stores it once) while none comes: the stream may be without
// a leader for a moment (a node restarting), or the acknowledgement lost
// with a node. Each attempt is bounded (queueTry), the whole by ctx and,
// unless zero, until (checked between attempts). uncertain reports that
// an attempt went unanswered, so without an acknowledgement in the end the
// stream may have stored the call all the same; it also tells whose a
// duplicate acknowledgement is: an earlier attempt's, stored, when
// uncertain, else another sender's (an attempt answered with an error
// stored nothing). tries counts the publishes.
func queueCall(ctx context.Context, js jetstream.JetStream, publish publisher, until time.Time, msg *nats.Msg) (ack *jetstream.PubAck, tries int, uncertain bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, false, err // nothing published
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		tries++
		ack, err = publish(ctx, msg)
		// An attempt whose ctx ended while it waited (a stopping worker's,
		// say) went unanswered too: the stream may have stored the call.
		unanswered := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, nats.ErrTimeout) ||
			errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, nats.ErrDisconnected)
		uncertain = uncertain || unanswered
		var apiErr *jetstream.APIError
		switch {
		case err == nil || ctx.Err() != nil || (!until.IsZero() && time.Now().After(until)):
			return ack, tries, uncertain, err
		case unanswered:
			continue
		case errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeDuplicateInProcess:
			// A message of this id is stored but not yet committed (the
			// stream lost its quorum meanwhile): asked again after a
			// while, the stream acknowledges it as a duplicate. Unless an
			// attempt of ours went unanswered (uncertain), it is another
			// sender's.
		case !kv.Transient(err):
			return ack, tries, uncertain, err
		case kv.NoJetStream(ctx, js, err):
			return ack, tries, uncertain, errNoJetStream
		default:
			// Bounded: without a JetStream meta leader nothing answers.
			sctx, cancel := context.WithTimeout(ctx, queueTry)
			_, serr := js.Stream(sctx, wire.StreamCalls)
			cancel()
			if errors.Is(serr, jetstream.ErrStreamNotFound) {
				return ack, tries, uncertain, err
			}
		}
		if !until.IsZero() {
			wait = min(wait, max(time.Until(until), 0))
		}
		if kv.Sleep(ctx, wait) != nil {
			return ack, tries, uncertain, err
		}
	}
}

// errCodeDuplicateInProcess is JetStream's answer to a message whose id
// an earlier message, not yet committed, has (JSStreamDuplicateMessageConflict).
const errCodeDuplicateInProcess jetstream.ErrorCode = 10158

// queueTry bounds one attempt at queueing a durable call.
const queueTry = 2 * time.Second

// publisher is one attempt at queueing a durable call, bounded by
// queueTry.
type publisher func(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error)

// syncPublisher attempts with a request of its own deadline.
func syncPublisher(js jetstream.JetStream) publisher {
	return func(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
		ctx, cancel := context.WithTimeout(ctx, queueTry)
		defer cancel()
		return js.PublishMsg(ctx, msg)
	}
}

// queuePublish is the client's publisher: one attempt whose
// acknowledgement comes to the client's own inbox subscription (a token
// of ackToken's form), bounded by queueTry, ctx and the client's Close.
// No subscription, goroutine or connection listener of its own: those of
// nats.go's asynchronous publisher outlive a CleanupPublisher made before
// its listener goroutine first ran (it then waits on a nil channel for
// the connection's life).
//
// "No responders" (the stream missing, or without a leader for a moment)
// is published again, as nats.go's publishers do, while ctx lasts.
func (c *Client) queuePublish(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	for retry := 0; ; retry++ {
		ack, err := c.queueOnce(ctx, msg)
		if !errors.Is(err, jetstream.ErrNoStreamResponse) || retry == jetstream.DefaultPubRetryAttempts {
			return ack, err
		}
		if serr := kv.Sleep(ctx, jetstream.DefaultPubRetryWait); serr != nil {
			return nil, serr
		}
	}
}

// ackToken marks an inbox token that awaits a stream's acknowledgement
// (call tokens are base 36 and have no '-').
const ackToken = '-'

// errClientClosed ends what a closed client waits for.
var errClientClosed = errors.New("the client was closed")

// ackReply is what a queue publish waiting in Client.acks gets: the
// stream's answer, or why none will come.
type ackReply struct {
	m   *nats.Msg
	err error
}

// awaitAck makes a reply subject of the client's inbox for a stream's
// acknowledgement, which comes on ch; done forgets it. ch is nil once the
// client is closed.
func (c *Client) awaitAck() (reply string, ch chan ackReply, done func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return "", nil, nil
	}
	reply, ch = c.awaitAckLocked()
	return reply, ch, func() { c.forgetAck(reply) }
}

// awaitAckLocked is awaitAck with c.mu held, also while Close ends the
// client (until endAcks); forgetAck forgets it.
func (c *Client) awaitAckLocked() (reply string, ch chan ackReply) {
	var rb [96]byte
	reply = string(strconv.AppendUint(append(append(rb[:0], c.prefix...), ackToken), c.next.Add(1), 36))
	ch = make(chan ackReply, 1)
	c.acks[reply[len(c.prefix):]] = ch
	return reply, ch
}

// forgetAck forgets the acknowledgement awaited on reply.
func (c *Client) forgetAck(reply string) {
	c.mu.Lock()
	delete(c.acks, reply[len(c.prefix):])
	c.mu.Unlock()
}

func (c *Client) queueOnce(ctx context.Context, msg *nats.Msg) (*jetstream.PubAck, error) {
	reply, ch, done := c.awaitAck()
	if ch == nil {
		return nil, errClientClosed
	}
	defer done()
	m := *msg
	m.Reply = reply
	if err := c.nc.PublishMsg(&m); err != nil {
		return nil, err
	}
	t := time.NewTimer(queueTry)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		return pubAck(r.m)
	case <-t.C:
		return nil, jetstream.ErrAsyncPublishTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// endAcks answers every queue publish waiting for its acknowledgement
// with err.
func (c *Client) endAcks(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for token, ch := range c.acks {
		delete(c.acks, token)
		ch <- ackReply{err: err} // cap 1, and nothing else is sent once removed
	}
}

// watchConnection ends the queue publishes waiting when the connection
// is lost: their publishes or acknowledgements may be lost with it, and
// queueCall publishes again at once (into the reconnect buffer) rather
// than after queueTry. It runs from the client's first durable call until
// Close removes status, which it is given (not read from the client: a
// Close before it runs has removed and closed it already).
func (c *Client) watchConnection(status chan nats.Status) {
	for st := range status {
		if st == nats.CLOSED {
			c.endAcks(nats.ErrConnectionClosed)
			return
		}
		c.endAcks(nats.ErrDisconnected)
	}
}

// pubAck reads a stream's answer to a publish, as nats.go does.
func pubAck(m *nats.Msg) (*jetstream.PubAck, error) {
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return nil, jetstream.ErrNoStreamResponse
	}
	var r struct {
		Error *jetstream.APIError `json:"error,omitempty"`
		jetstream.PubAck
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return nil, jetstream.ErrInvalidJSAck
	}
	if r.Error != nil {
		return nil, r.Error
	}
	if r.Stream == "" {
		return nil, jetstream.ErrInvalidJSAck
	}
	return &r.PubAck, nil
}

// byDefault reports whether calls of tool go through the queue when they
// arrive on the core path.
func (d *durablePath) byDefault(tool string) bool {
	if slices.Contains(d.o.Tools, tool) {
		return true
	}
	t, ok := d.w.tk.Get(tool)
	return ok && t.Durable()
}

// enqueue puts a call that arrived on the core path into the queue and
// tells the caller so (a queued frame); false when the queue did not take
// it, and the call is then run here as a core call. deadline is that of
// a call that waited for input memory, zero for any other.
func (d *durablePath) enqueue(in *incoming, id, session string, deadline time.Time) bool {
	h := nats.Header{}
	for k, v := range in.header {
		h[k] = v
	}
	h.Set(wire.HeaderReply, in.reply)
	h.Set(jetstream.MsgIDHeader, callKey(in.identity, id))
	// A timeout header stays: the worker that takes the call counts it
	// from when the call was queued, a moment after the caller sent it.
	// A call that waited for input memory (deadline) goes with what is
	// left of it.
	if !deadline.IsZero() && h.Get(wire.HeaderTimeout) != "" {
		h.Set(wire.HeaderTimeout, strconv.FormatInt(max(time.Until(deadline).Milliseconds(), 0), 10))
	}
	ctx, cancel := context.WithTimeout(d.ctx, enqueueWorkerWait)
	defer cancel()
	msg := &nats.Msg{Subject: wire.DurableSubject(in.tool, in.identity), Header: h, Data: in.data}
	ack, _, uncertain, err := queueCall(ctx, d.js, syncPublisher(d.js), time.Time{}, msg)
	c := wire.CodecOf(in.header)
	if err == nil && ack.Duplicate && !uncertain {
		var b jetstream.KeyValue
		if d.w.results != nil {
			b = d.w.results.kv
		}
		qid, _, again := approvalResend(ctx, d.js, b, callKey(in.identity, id), h.Get(jetstream.MsgIDHeader))
		if !again {
			// The stream has it already and stores nothing: answered
			// here, or the caller would wait for its deadline.
			d.w.replyFinal(in, c, duplicateCall(id), session)
			return true
		}
		// Sent again after its approval: queued under an id of its own
		// (a duplicate of that: the approved call runs already).
		h.Set(jetstream.MsgIDHeader, qid)
		if ack, _, uncertain, err = queueCall(ctx, d.js, syncPublisher(d.js), time.Time{}, msg); err == nil && ack.Duplicate && !uncertain {
			d.w.replyFinal(in, c, duplicateCall(id), session)
			return true
		}
	}
	switch {
	case err == nil:
	case kv.Full(err):
		// Refused, as the client's own enqueue is: run here, on the core
		// path, the call would be lost with this worker, which its tool's
		// being durable by default says it must not be.
		resp := d.w.finalFor(id, toolkit.CodeOverloaded, queueFullText(err))
		resp.Metadata[wire.MetaRetryAfterMS] = queueFullRetry.Milliseconds()
		d.w.replyFinal(in, c, resp, session)
		return true
	case !uncertain:
		d.w.count.jsErrors.Add(1)
		d.w.log.Warn("bus: could not queue a durable call; running it here", "tool", in.tool, "call", id, "err", err)
		return false
	default:
		// The stream may have stored the call without saying so: then it
		// runs from the queue and answers the caller. Running it here too
		// would run it twice, and answering anything could be a second
		// final; without either, a call the stream did not take ends
		// worker_lost at the caller's stall timeout ("may or may not
		// have taken effect").
		d.w.count.jsErrors.Add(1)
		d.w.log.Warn("bus: a durable call's queueing went unanswered; leaving it to the queue", "tool", in.tool, "call", id, "err", err)
		return true
	}
	// After the frames the worker that passed the call on sent, if any.
	data, err := c.Marshal(&wire.Frame{Kind: wire.KindQueued, ID: id, Seq: in.seqAfter() + 1, Stream: ack.Sequence})
	if err == nil {
		err = d.w.publish(in.reply, c, wire.KindQueued, data)
	}
	if err != nil {
		d.w.log.Warn("bus: telling the caller its call is queued", "call", id, "err", err)
	}
	return true
}

// duplicateCall is the final of a durable call the calls stream has
// already (within its dedup window).
func duplicateCall(id string) *toolkit.Response {
	return toolkit.Final(id, toolkit.CodeInvalidInput, fmt.Sprintf(
		"DuplicateCallError: a durable call with id %q was sent already (within the calls stream's duplicate window, 2 minutes by default): it runs once, and its frames go to where it was sent first; its final is kept, for Client.Result (toolctl result ID) to read.", id))
}

// enqueueWorkerWait bounds how long a worker tries to queue a call that
// arrived on the core path for a durable tool.
const enqueueWorkerWait = 5 * time.Second

// cancelsPause is how long after a failed lookup of the cancels stream
// durable calls are taken without one.
const cancelsPause = 10 * time.Second

// cancelMargin allows for the clocks of the servers and workers when
// the time a call was queued is compared with the cancels heard.
const cancelMargin = 5 * time.Second

// hearing notes, once the worker hears cancels, the calls stream's last
// sequence: the calls stored up to it may have been cancelled before. The
// subscription is flushed first, so a cancel the server routes after the
// reading reaches this worker. Without the reading, every call counts.
func (d *durablePath) hearing(nc *nats.Conn) {
	defer d.heardAt.Store(nc.Stats().Reconnects)
	ctx, cancel := context.WithTimeout(d.ctx, 5*time.Second)
	defer cancel()
	err := nc.FlushWithContext(ctx)
	var info *jetstream.StreamInfo
	if err == nil {
		info, err = d.stream.Info(ctx)
	}
	if err != nil {
		d.w.log.Warn("bus: could not read the calls stream's position; every durable call looks up its cancels", "err", err)
		d.heardFrom.Store(math.MaxUint64)
		return
	}
	d.heardFrom.Store(info.State.LastSeq)
}

// rehear notes the calls stream's last sequence again once the worker
// has reconnected: the cancels published while it was cut off went by
// unheard. The calls taken meanwhile wait for the reading.
func (d *durablePath) rehear(nc *nats.Conn) {
	d.rehearing.Lock()
	defer d.rehearing.Unlock()
	if nc.Stats().Reconnects != d.heardAt.Load() {
		d.hearing(nc)
	}
}

// unheard reports whether a cancel of the delivered call may have gone by
// unheard: the call was stored before this worker heard cancels (at start,
// or again after a reconnect), or long enough ago that its tombstone would
// be gone, or before a tombstone was pushed out by a flood of them.
func (w *Worker) unheard(dur *delivery) bool {
	if w.nc.Stats().Reconnects != w.dur.heardAt.Load() {
		w.dur.rehear(w.nc)
	}
	if dur.seq <= w.dur.heardFrom.Load() || time.Since(dur.published) > w.opts.TombstoneTTL-cancelMargin {
		return true
	}
	w.mu.Lock()
	evicted := w.tombsEvicted
	w.mu.Unlock()
	return !evicted.IsZero() && !dur.published.After(evicted.Add(cancelMargin))
}

// recheck looks up, once the worker has reconnected, the cancels of the
// durable calls running here, and cancels those cancelled: a cancel
// published while the worker was cut off went by unheard, and the call
// would run on to its end, its caller long told it was interrupted (the
// calls taken from the queue after the reconnect look theirs up as they
// are taken: unheard). The clock calls it while calls run; the lookups
// run on a goroutine of their own, one at a time. Lookups put off
// (cancelsPause) or failed leave the reconnect unchecked: looked up again
// once the pause is over.
func (d *durablePath) recheck(now time.Time) {
	// Every recheckEvery, not every tick: the connection's statistics
	// are read under its lock, which publishes take.
	if now.Sub(d.rechecked) < recheckEvery {
		return
	}
	d.rechecked = now
	select {
	case <-d.cancelsBound:
	default:
		return // checked once the bind at start has ended
	}
	if d.withoutCancels() || time.Since(time.Unix(0, d.cancelsFailed.Load())) < cancelsPause {
		return
	}
	n := d.w.nc.Stats().Reconnects
	if n == d.checkedAt.Load() || !d.checking.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer d.checking.Store(false)
		d.rehear(d.w.nc)
		defer func() {
			if time.Since(time.Unix(0, d.cancelsFailed.Load())) >= cancelsPause {
				d.checkedAt.Store(n) // no lookup failed (or was put off)
			}
		}()
		var running []*sender
		d.w.mu.Lock()
		for _, s := range d.w.calls {
			if s.dur != nil {
				running = append(running, s)
			}
		}
		d.w.mu.Unlock()
		for _, s := range running {
			if reason, ok := d.cancelledKey(s.key, s.id, s.dur.published); ok {
				cause := toolkit.ErrCallerCancelled
				if reason == wire.CancelReasonDeadline {
					cause = context.DeadlineExceeded
				}
				s.cancel(cause) // counted by its final, as a cancel heard
			}
		}
	}()
}

// recheckEvery is how often the clock looks whether the worker has
// reconnected (recheck).
const recheckEvery = 100 * time.Millisecond

// cancelled looks up the cancels stream for a cancel of the call of key
// recorded after the call was queued (an earlier one is of a call sent
// before under the same id); its reason, or false. A failed lookup is
// logged and counts as none.
func (d *durablePath) cancelled(identity, id string, published time.Time) (reason string, ok bool) {
	return d.cancelledKey(callKey(identity, id), id, published)
}

// cancelledKey is cancelled by the call's key (callKey).
func (d *durablePath) cancelledKey(key, id string, published time.Time) (reason string, ok bool) {
	if time.Since(time.Unix(0, d.cancelsFailed.Load())) < cancelsPause {
		return "", false
	}
	cancels := d.cancelsStream()
	if cancels == nil {
		return "", false
	}
	// Not bounded by d.ctx: a stopping worker still takes the calls of
	// the batches its pull loops hold, and they run on.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := cancels.GetLastMsgForSubject(ctx, wire.SubjectCancelledPrefix+key) // wire.CancelledSubject
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return "", false
	case err != nil:
		d.cancelsFailed.Store(time.Now().UnixNano())
		d.w.log.Warn("bus: could not look up the cancels of a durable call; it runs, and so do the calls taken in the next "+cancelsPause.String()+" without a lookup", "call", id, "err", err)
		return "", false
	case m.Time.Before(published.Add(-cancelMargin)):
		return "", false
	case !isCancelRecord(m.Header, m.Data):
		return "", false
	}
	return string(m.Data), true
}

// isCancelRecord reports whether a cancels stream message read with
// headers h (the stored ones, and a direct get's Nats-* after them) and
// body is a client's record of a cancel: a cancel's body (cancelBody) with
// the wire version the client wrote it in. A server's answer a caller had
// the server publish on another identity's record subject carries no
// such header: a direct get's 404 or a 503 is stored without its status
// line, as an empty message with no headers, which is an empty cancel's
// body; a copy of a stored message carries the server's Nats-Stream of
// its own beside the get's.
func isCancelRecord(h nats.Header, body []byte) bool {
	if !cancelBody(body) || !versioned(h) ||
		len(h.Values(jetstream.StreamHeader)) > 1 {
		return false
	}
	_, status := h["Status"]
	_, op := h[wire.HeaderKVOperation]
	return !status && !op
}

// mayRepeat reports whether a redelivered durable call may run again: its
// tool is read-only or idempotent. Otherwise it answers worker_lost (the
// call may have run) and settles the call. A call whose final is kept
// ended already, and only its acknowledgement was lost: it is settled
// without running or answering again, and the kept final stays what its
// caller got (or reads back).
func (w *Worker) mayRepeat(in *incoming, c wire.Codec, id, session string) bool {
	if in.dur.attempt <= 1 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ended, err := w.ended(ctx, callKey(in.identity, id))
	if ended {
		in.dur.settle()
		return false
	}
	if t, ok := w.tk.Get(in.tool); ok && (t.ReadOnly() || t.Idempotency().Retryable()) || !ok && in.dur.repeatable {
		return true
	}
	if err != nil {
		// Whether it ended cannot be told: a worker_lost kept over its
		// final would replace what its caller got. The next delivery (or
		// the advisory after the last) looks again.
		w.count.jsErrors.Add(1)
		w.log.Warn("bus: reading the kept final of a redelivered durable call; handing it back", "tool", in.tool, "call", id, "err", err)
		in.dur.handBackLater()
		return false
	}
	w.replyFinal(in, c, w.finalFor(id, toolkit.CodeWorkerLost, mayHaveRunText(in.tool, in.dur.attempt)), session)
	w.settle(in.dur)
	return false
}

// ended reports whether the call of key has a kept final that ended it;
// err when the results bucket could not be read (it may have). A kept
// approval_required final (or an approval mismatch) ended without
// running, unless its tool ran (keptFinal.awaitsApproval): the call sent
// again after its approval runs (approvalResend).
func (w *Worker) ended(ctx context.Context, key string) (bool, error) {
	if w.results == nil {
		return false, nil
	}
	k, ok, err := readKept(ctx, w.results.js, w.results.kv.Bucket(), key, false)
	return err == nil && ok && !k.awaitsApproval(), err
}

func mayHaveRunText(tool string, attempt uint64) string {
	return fmt.Sprintf("WorkerLostError: the worker running '%s' was lost; the tool is not declared idempotent, so its call is not run again (attempt %d). It may or may not have taken effect.", tool, attempt)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
