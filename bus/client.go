package bus

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/discovery"
	"github.com/toolbus/toolbus/toolkit"
)

// ClientOptions configure a Client. A nil *ClientOptions means the
// defaults; so does every zero field.
type ClientOptions struct {
	// Heartbeat is the interval at which the client asks workers to send a
	// heartbeat when a call is otherwise silent, taken within
	// [MinHeartbeat, MaxHeartbeat] (as the worker takes it). Default
	// DefaultHeartbeat.
	Heartbeat time.Duration
	// StallTimeout ends a call as worker_lost (and publishes its cancel)
	// when no frame arrived for that long; calls are looked at every
	// StallTimeout/8, so it ends at most an eighth later. A call with
	// KeepResult whose final is kept (lost on its way, its link down
	// meanwhile) ends with that final instead. Default 3 × Heartbeat.
	StallTimeout time.Duration
	// CancelGrace is how long a call whose ctx ended waits for the
	// worker's final (interrupted or timeout, with the partial output)
	// before the client makes one up. Default StallTimeout.
	CancelGrace time.Duration
	// QueueWait bounds how long a durable call waits for the calls stream
	// to take it (a stream without a leader for a moment, a node
	// restarting): it is published again, stored once, until then, and
	// then ends unavailable. Default 30s.
	QueueWait time.Duration
	// Logger receives lost frames and undecodable frames. Default
	// slog.Default().
	Logger *slog.Logger
	// GroupsBucket is the JetStream KV bucket holding the fleet's group
	// state, read by SessionSchemas and ActiveGroups. Default
	// wire.BucketGroups.
	GroupsBucket string
	// DiscoverWindow is how long the client's Fleet collects the workers'
	// announcements when it starts; 0 means
	// discovery.DefaultDiscoverWindow.
	DiscoverWindow time.Duration
	// Fleet, when set, is the view of the fleet the client lists with,
	// shared with its other users (clients of several identities on one
	// connection, whose refreshes follow its changes); the client does
	// not close it. Nil: the client starts a Fleet of its own on first
	// use and closes it with the client.
	Fleet *discovery.Fleet
	// Filter, when set, narrows what SessionSchemas lists for a session;
	// permission.ListFilter leaves out the tools a session can never run.
	Filter ListFilter
	// MaxAttempts bounds how often a call is sent when it ends
	// worker_lost, overloaded, or interrupted by its worker's stop (past
	// its grace period: wire.MetaDrained, not the caller's cancel) before
	// any chunk reached the caller and its tool is read-only or
	// idempotent (as the fleet announces it): the client sends it again,
	// at once after worker_lost or such an interrupt, after
	// retry_after_ms (up to 2s; longer ends the call) after overloaded,
	// within the call's deadline, unless Cancel or ctx ended it. The
	// final's metadata says how many attempts were made (wire.MetaAttempts)
	// when more than one. A call whose last attempt, after a lost or
	// interrupted one, did not run its tool (answered approval_required
	// because the lost attempt used the call's approval, unavailable,
	// overloaded or not_found) ends with that attempt's worker_lost
	// (that one may have run) or interrupted final. 0 means 3; 1 never
	// sends a call twice.
	MaxAttempts int
	// Identity is the caller identity the client calls as (one token of
	// [A-Za-z0-9_-]; "" calls anonymously). Its calls, cancels and
	// listings go to the identity's subjects (wire.CallSubject), its
	// replies come to its inbox (wire.Inbox), and its sessions are its
	// own: the same session name of another identity is another session.
	// With the caller role's NATS permissions (package auth) nobody else
	// can publish there, read its replies or cancel its calls.
	Identity string
	// Asker answers the requests tools make of their caller (toolkit.Ask:
	// elicitation, sampling), unless a call's context has its own
	// (WithAsker). Nil: such requests are answered that this caller
	// cannot answer them, and the tool gets that error. The context it
	// gets is the call's, and ends when the call ends: the call's final
	// does not wait for its Asker, which must then return (one that
	// ignores its context outlives the call on a goroutine of the
	// client's).
	Asker Asker
	// MaxSessions bounds how many sessions the client remembers things
	// of: each session's latest groups revision (Revision) and the worker
	// its session-bound tools are pinned to (Pin), each kept for at most
	// MaxSessions sessions, the least recently used forgotten first. A
	// forgotten revision only means the session's next calls do not ask
	// the workers to wait for its last reset_tools (read-your-writes): a
	// worker may read an older state from a lagging KV replica, which a
	// session not used for that long rarely meets. A forgotten pin sends
	// the session's calls through the queue group, whose worker passes
	// them on to the session's worker. 0 means DefaultMaxSessions.
	MaxSessions int
	// MaxPending bounds the memory of a call's frames that arrived and
	// that its caller has not taken yet (Call's events not consumed): their
	// bytes, and about 160 more for each message, which a flood of small
	// frames (progress reports) would otherwise multiply: past it
	// the call is cancelled and ends interrupted (SlowConsumerError) with
	// the output taken so far, so a tool that writes faster than its
	// caller reads cannot grow the caller without end. No frame after
	// the one that passed the bound is taken, its final neither: the text
	// says the tool may have finished, and taken effect. 0 means
	// DefaultMaxPending.
	MaxPending int64
	// MaxPendingTotal bounds the same memory over all the client's calls
	// together, which MaxPending alone lets grow to MaxPending times the
	// calls whose callers stall. When a frame would take the total past
	// it, the call holding the most unread (not the one whose frame came,
	// which may be a caller keeping up) is shed: its unread frames are
	// dropped at once, and, unless it was over MaxPending already, it is
	// cancelled and ends interrupted (SlowConsumerError) with the output
	// its caller took, saying it may have taken effect (its tool may
	// finish before the cancel reaches it). Its final is never dropped:
	// a call whose final has arrived unread (its tool finished; it will
	// not grow) has its chunks dropped, is not cancelled, and ends with
	// its real outcome, the chunks dropped counted in lost_chunks (the
	// kept final, whole, for a KeepResult or durable call, as for chunks
	// lost on the way). A batch already being handed to a caller is not
	// dropped (its caller holds it), but counts. 0 means 4 × MaxPending
	// (256 MiB with the default MaxPending); negative, no bound.
	MaxPendingTotal int64
	// MaxResultBytes bounds the output of one call the client
	// accumulates (toolkit.Chunk.Size and MetaSize of the chunks
	// received, and 256 bytes for each block kept after the first: a
	// block that merges into the one before it costs nothing more), as
	// toolkit.Options.MaxResultBytes does on the worker, counting alike
	// (toolkit.Accumulator.HeldWith): past it the call is cancelled and ends tool_error
	// (ToolOutputTooLargeError) with the output up to the bound. 0 means
	// toolkit.DefaultMaxResultBytes; negative, no bound.
	MaxResultBytes int
}

// maxBoundTools bounds the tools a Client remembers to be session-bound;
// past it the memory is cleared (the next calls go through the queue
// group until their finals say so again).
const maxBoundTools = 4096

// DefaultMaxSessions is how many sessions a Client remembers revisions
// and pins of unless ClientOptions.MaxSessions says otherwise.
const DefaultMaxSessions = 100_000

// DefaultMaxPending is ClientOptions.MaxPending's default: 64 MiB.
const DefaultMaxPending = 64 << 20

// ListFilter narrows the schemas SessionSchemas lists for a session; it
// gets the fleet they were listed from.
type ListFilter func(ctx context.Context, f *discovery.Fleet, session string, schemas []toolkit.FunctionSchema) ([]toolkit.FunctionSchema, error)

func (o *ClientOptions) withDefaults() ClientOptions {
	var r ClientOptions
	if o != nil {
		r = *o
	}
	if r.Heartbeat <= 0 {
		r.Heartbeat = DefaultHeartbeat
	}
	r.Heartbeat = min(max(r.Heartbeat, MinHeartbeat), MaxHeartbeat)
	if r.StallTimeout <= 0 {
		r.StallTimeout = 3 * r.Heartbeat
	}
	if r.CancelGrace <= 0 {
		r.CancelGrace = r.StallTimeout
	}
	if r.QueueWait <= 0 {
		r.QueueWait = enqueueWait
	}
	if r.Logger == nil {
		r.Logger = slog.Default()
	}
	if r.GroupsBucket == "" {
		r.GroupsBucket = wire.BucketGroups
	}
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 3
	}
	if r.MaxSessions <= 0 {
		r.MaxSessions = DefaultMaxSessions
	}
	if r.MaxPending <= 0 {
		r.MaxPending = DefaultMaxPending
	}
	if r.MaxPendingTotal == 0 {
		r.MaxPendingTotal = math.MaxInt64
		if r.MaxPending <= math.MaxInt64/4 {
			r.MaxPendingTotal = 4 * r.MaxPending
		}
	}
	if r.MaxResultBytes == 0 {
		r.MaxResultBytes = toolkit.DefaultMaxResultBytes
	}
	return r
}

// Client calls tools over NATS. It receives every call's frames on one
// wildcard inbox subscription and routes them to the calls by the last
// subject token. A Client is safe for concurrent use; one per connection
// is enough.
type Client struct {
	nc     *nats.Conn
	opts   ClientOptions
	log    *slog.Logger
	prefix string // inbox prefix, ending in "."
	sub    *nats.Subscription
	hbHdr  string
	next   atomic.Uint64
	// queued is what the pending calls hold for their callers (the sum of
	// their inbox.pending), bounded by MaxPendingTotal.
	queued atomic.Int64
	// lookWait bounds a look at a tool's consumer (consumerInfo): 0 is
	// lookupWait (a test holding a look back sets it longer).
	lookWait time.Duration

	mu      sync.Mutex
	pending map[string]*inbox
	// byFirst indexes pending by the id their callers gave (inbox.first),
	// for Cancel.
	byFirst map[string][]*inbox
	acks    map[string]chan ackReply // queue publishes awaiting their acknowledgement (queueOnce)
	// retrying holds, by the id their caller gave, a stop for each Call
	// that may be sent again: Cancel(id) closes those there at the time.
	retrying map[string][]chan struct{}
	revs     *lru[revision] // session → latest groups revision seen
	// revClock counts the revisions noted; revHigh is at least every
	// remembered revision, the one noted at revHighAt.
	revClock, revHigh, revHighAt uint64
	pins                         *lru[string]    // session scope → the worker its session-bound tools run on
	bound                        map[string]bool // tools seen to be session-bound; at most maxBoundTools
	closed                       bool
	closing                      chan struct{} // closed by Close: calls waiting to be sent again go on at once
	watching                     bool          // the stall watchdog runs (while calls are pending)

	afterRun func(attemptID string) // tests: after an attempt's run, before a retry is decided
	// retryTimer, when set (tests), makes the timer of a wait for
	// retry_after_ms in place of time.NewTimer: its channel and its stop.
	retryTimer func(time.Duration) (<-chan time.Time, func() bool)

	// The discovery view of SessionSchemas and ActiveGroups, made on
	// first use; fleetMu is taken before mu, never inside it.
	fleetMu sync.Mutex
	fleet   *discovery.Fleet
	state   *KVState // nil while the groups bucket does not exist
	js      jetstream.JetStream
	publish publisher        // queues durable calls: queuePublish, or a test's
	status  chan nats.Status // the connection's losses, for watchConnection; set with js
	// connClosed hears the connection close for good, for watch.
	connClosed chan nats.Status
	results    jetstream.KeyValue // nil until bound
	// consumers are the tools whose durable consumer was seen (unserved).
	consumers consumersSeen
	// looks are the latest looks at the tools' consumers (settled).
	looks consumerLooks
}

// durableLookEvery bounds how often a durable call that hears nothing
// looks for its kept final.
const durableLookEvery = 5 * time.Second

// inbox queues the messages of one call without bounds, so the shared
// subscription callback never blocks on a slow consumer. Inboxes are
// reused: messages are pushed only while the inbox is in c.pending, under
// c.mu, so none reaches an inbox after its call removed it.
type inbox struct {
	signal chan struct{} // cap 1
	id     string        // the call's id, for the cancel at Close
	first  string        // the id its caller gave, of which id is an attempt

	cancelled bool // Cancel(first) came while the call was pending; under Client.mu
	// durable: the call is, or may be, in the durable queue, so its
	// cancels are recorded too (Client.cancel).
	durable atomic.Bool

	mu      sync.Mutex
	msgs    []*nats.Msg
	last    time.Time // when the last message was pushed, or the call started
	closed  bool      // the client was closed
	lost    bool      // the connection was closed (for good)
	stalled bool      // the watchdog found the call silent for stallAfter
	// pending is what msgs and the batch taken last cost to hold
	// (heldCost; handed is the batch's share): the client hands a batch to
	// its caller before it takes the next. Past limit (MaxPending) the
	// inbox is over: it takes nothing more, and the call ends. total is
	// its client's queued, which pending's changes are added to. ends is
	// what the frames that end the call cost that shed kept in msgs (see
	// shed), which shedding again would not give back.
	pending, handed, limit, ends int64
	total                        *atomic.Int64
	over                         overReason
	// stallAfter is the silence after which the call is looked at:
	// StallTimeout.
	stallAfter time.Duration
	spare      [2][4]*nats.Msg
}

// overReason says why an inbox takes no more frames.
type overReason uint8

const (
	notOver   overReason = iota
	overCall             // past its MaxPending
	overTotal            // shed for the client's MaxPendingTotal
)

var inboxPool = sync.Pool{New: func() any { return &inbox{signal: make(chan struct{}, 1)} }}

func (b *inbox) notify() {
	select {
	case b.signal <- struct{}{}:
	default:
	}
}

// push queues m, unless the inbox is over; c.mu is held. It reports
// whether m made the inbox over.
func (b *inbox) push(m *nats.Msg, now time.Time) (over bool) {
	b.mu.Lock()
	if b.over != notOver {
		b.mu.Unlock()
		return false
	}
	b.msgs = append(b.msgs, m)
	b.last, b.stalled = now, false
	cost := heldCost(m)
	b.total.Add(cost)
	if b.pending += cost; b.pending > b.limit {
		b.over, over = overCall, true
	}
	b.mu.Unlock()
	b.notify()
	return over
}

// unread is what the inbox's queued messages cost, the batch being
// handed and the frames shed kept left out: what shed would give back.
func (b *inbox) unread() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending - b.handed - b.ends
}

// shed drops the queued messages, not the batch being handed, nor a
// frame that ends the call (its final, or a no-responders status): a call
// whose final has arrived has finished, and sending nothing more it will
// not grow, so it ends with its real outcome (the chunks dropped counted
// as lost_chunks), neither cancelled nor made over. Without such a frame
// shed makes the inbox over (MaxPendingTotal) unless it was over already;
// it reports whether it made it over, and the call is then to be
// cancelled.
func (b *inbox) shed() (over bool) {
	b.mu.Lock()
	kept := b.msgs[:0]
	var ends int64
	for _, m := range b.msgs {
		if endsCall(m) {
			kept = append(kept, m)
			ends += heldCost(m)
		}
	}
	clear(b.msgs[len(kept):])
	b.msgs = kept
	b.total.Add(b.handed + ends - b.pending)
	b.pending, b.ends = b.handed+ends, ends
	if len(kept) == 0 && b.over == notOver {
		b.over, over = overTotal, true
	}
	b.mu.Unlock()
	b.notify()
	return over
}

// endsCall reports whether m would end its call: a final frame, or a
// no-responders status. A final as the Go worker encodes it (a msgpack
// map whose first key is kind) is told by its first bytes; any other
// frame is decoded (only when a call is shed, rarely).
func endsCall(m *nats.Msg) bool {
	if isNoResponders(m) {
		return true
	}
	const kind, final = "\xa4kind", "\xa5final"
	if d := m.Data; len(d) > len(kind) && d[0]&0xf0 == 0x80 && string(d[1:1+len(kind)]) == kind && wire.CodecOf(m.Header) == wire.Msgpack {
		d = d[1+len(kind):]
		return len(d) >= len(final) && string(d[:len(final)]) == final
	}
	var f wire.Frame
	return decodeFrame(&f, m) == nil && f.Kind == wire.KindFinal
}

// msgHeld is about what a received message costs its receiver beyond
// its subject, headers and payload: the nats.Msg, its place in the
// queue, the rounding of its allocations. A small frame (a progress
// report, a heartbeat) costs more than its payload.
const msgHeld = 160

// heldCost is what m costs to hold until its caller takes it.
func heldCost(m *nats.Msg) int64 {
	n := msgHeld + len(m.Subject) + len(m.Reply) + len(m.Data)
	for k, vs := range m.Header {
		n += len(k) + 64 // the map entry
		for _, v := range vs {
			n += len(v) + 16
		}
	}
	return int64(n)
}

// take swaps the queued messages with buf, which the caller has used up;
// over: messages after these were not taken (MaxPending,
// MaxPendingTotal).
func (b *inbox) take(buf []*nats.Msg) (msgs []*nats.Msg, closed, lost, stalled bool, over overReason) {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(buf) // the batch taken before: handed over
	msgs, b.msgs = b.msgs, buf[:0]
	b.total.Add(-b.handed)
	b.pending -= b.handed
	b.handed, b.ends = b.pending, 0
	return msgs, b.closed, b.lost, b.stalled, b.over
}

// reset readies a used inbox for the pool, giving back what it held to
// its client's total; it is in no c.pending.
func (b *inbox) reset(buf []*nats.Msg) {
	b.total.Add(-b.pending)
	clear(b.msgs)
	clear(buf)
	clear(b.spare[0][:])
	clear(b.spare[1][:])
	b.msgs, b.closed, b.lost, b.stalled, b.cancelled = b.spare[0][:0], false, false, false, false
	b.pending, b.handed, b.ends, b.over = 0, 0, 0, notOver
	b.durable.Store(false)
	select {
	case <-b.signal:
	default:
	}
}

// NewClient subscribes the client's inbox on nc. Close releases it.
func NewClient(nc *nats.Conn, opts *ClientOptions) (*Client, error) {
	if nc == nil {
		return nil, errors.New("bus: NewClient needs a connection")
	}
	o := opts.withDefaults()
	if !toolkit.ValidName(o.GroupsBucket) {
		return nil, fmt.Errorf("bus: invalid KV bucket name %q: must match [A-Za-z0-9_-]+", o.GroupsBucket)
	}
	if o.Identity != "" && !wire.ValidIdentity(o.Identity) {
		return nil, fmt.Errorf("bus: invalid identity %s: it must be 1-%d characters of [A-Za-z0-9_-]", wire.Quote(o.Identity), wire.MaxCallIDLen)
	}
	// Workers reply only under wire.Inbox(identity): an identity's inbox
	// is there whatever the connection's inbox prefix; an anonymous one
	// is the connection's (nats.CustomInboxPrefix under _INBOX. works).
	prefix := nc.NewInbox() + "."
	if o.Identity != "" {
		prefix = wire.Inbox(o.Identity) + nuid.Next() + "."
	}
	// A call's reply subject is the prefix and a base-36 counter (at
	// most 13 bytes); workers answer none past wire.MaxReplyLen. Only a
	// connection's own inbox prefix can be that long.
	if len(prefix)+13 > wire.MaxReplyLen {
		own := len(nc.Opts.InboxPrefix)
		if own == 0 {
			own = len(nats.InboxPrefix) - 1
		}
		added := len(prefix) + 13 - own // a dot, a unique part, a dot, a call's number
		return nil, fmt.Errorf("bus: the connection's inbox prefix (nats.CustomInboxPrefix) is %d bytes, and may be at most %d: workers answer no reply subject past %d bytes, and a call's adds %d to it",
			own, wire.MaxReplyLen-added, wire.MaxReplyLen, added)
	}
	c := &Client{
		nc: nc, opts: o, log: o.Logger,
		closing: make(chan struct{}),
		prefix:  prefix,
		pending: map[string]*inbox{},
		byFirst: map[string][]*inbox{},
		acks:    map[string]chan ackReply{},
		revs:    newLRU[revision](o.MaxSessions),
		pins:    newLRU[string](o.MaxSessions),
		bound:   map[string]bool{},
	}
	sub, err := nc.Subscribe(c.prefix+"*", c.onMsg)
	if err != nil {
		return nil, fmt.Errorf("bus: subscribing the client inbox: %w", err)
	}
	// Calls may stream many frames: the client bounds what it queues
	// itself, per call (MaxPending) and in all (MaxPendingTotal), and
	// never blocks in its callback, so the subscription bounds nothing.
	sub.SetPendingLimits(-1, -1)
	c.sub = sub
	c.publish = c.queuePublish
	c.connClosed = nc.StatusChanged(nats.CLOSED)
	if o.Heartbeat != DefaultHeartbeat { // the worker's default needs no header
		c.hbHdr = strconv.FormatInt(o.Heartbeat.Milliseconds(), 10)
	}
	return c, nil
}

// Close unsubscribes the inbox and stops the discovery Fleet; calls still
// running are cancelled on their workers and end with code unavailable
// (worker_lost for a call sent again after a lost attempt, which may have
// run: see MaxAttempts). A durable call's cancel is recorded for the
// worker that takes it from the queue later: Close waits for the cancels
// stream's answers (at most 2 s in all), and its error wraps
// ErrCancelNotRecorded, naming the call, for each record the stream
// refused (full): that call may still run.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	var recs []*record
	for token, b := range c.pending {
		// Nobody will read the call's answer: its tool need not run on.
		var err error
		if b.durable.Load() {
			// Whether the cancels stream keeps its record is Close's to
			// tell: the call may still run when a worker takes it.
			rec := c.recordLocked(b.id)
			if err = rec.publish("", c.prefix+token); err == nil {
				recs = append(recs, rec)
			}
		} else {
			err = c.cancel(b.id, "", b.durable.Load(), c.prefix+token)
		}
		if err != nil {
			c.log.Warn("bus: cancelling a call at close", "call", b.id, "err", err)
		}
		b.mu.Lock()
		b.closed = true
		b.mu.Unlock()
		b.notify()
	}
	c.pending = map[string]*inbox{}
	c.byFirst = map[string][]*inbox{}
	c.mu.Unlock()
	// The records went out together: their answers are awaited at most
	// recordWait in all.
	var rerr error
	for _, rec := range recs {
		rerr = errors.Join(rerr, rec.wait())
	}
	c.endAcks(errClientClosed)
	c.fleetMu.Lock()
	var ferr error
	if c.fleet != nil && c.fleet != c.opts.Fleet { // a shared one is its owner's to close
		ferr = c.fleet.Close()
	}
	if c.status != nil {
		c.nc.RemoveStatusListener(c.status) // ends watchConnection
	}
	c.nc.RemoveStatusListener(c.connClosed)
	c.fleetMu.Unlock()
	return errors.Join(rerr, c.sub.Unsubscribe(), ferr)
}

func (c *Client) onMsg(m *nats.Msg) {
	token := m.Subject[len(c.prefix):]
	now := time.Now()
	var over *inbox
	var id string
	var durable bool
	var shed []shedCall
	c.mu.Lock()
	if b := c.pending[token]; b != nil {
		if b.push(m, now) {
			over, id, durable = b, b.id, b.durable.Load()
		}
		// Each call is shed at most once here: shed leaves it nothing to
		// give back but the frames that end it.
		for bound, n := c.opts.MaxPendingTotal, len(c.pending); bound > 0 && n > 0 && c.queued.Load() > bound; n-- {
			t, s := c.largestLocked()
			if s == nil {
				break
			}
			if s.shed() {
				shed = append(shed, shedCall{s.id, c.prefix + t, s.durable.Load()})
			}
		}
	} else if ch := c.acks[token]; ch != nil {
		delete(c.acks, token) // one answer
		ch <- ackReply{m: m}
	}
	c.mu.Unlock()
	// At once, while their callers may still be busy with earlier events:
	// the tools stop writing what nobody will read.
	if over != nil {
		c.cancel(id, "", durable, m.Subject)
	}
	for _, s := range shed {
		c.cancel(s.id, "", s.durable, s.reply)
	}
}

// shedCall is a call shed for MaxPendingTotal, to be cancelled.
type shedCall struct {
	id, reply string
	durable   bool
}

// largestLocked is the pending call holding the most unread that
// shedding would give back (unread), to be shed for MaxPendingTotal, and
// its token; nil when none holds any. c.mu is held. Taking the largest
// rather than the call whose frame came spares a caller that keeps up;
// the look at every pending call is only past the bound. onMsg sheds
// until the total is under the bound again, or every call holding
// anything unread was shed; what is left over the bound then is batches
// being handed and frames that end calls, which their callers hold (a
// caller that took its frame meanwhile, take not holding c.mu, is found
// holding nothing).
func (c *Client) largestLocked() (token string, b *inbox) {
	var most int64
	for t, x := range c.pending {
		if n := x.unread(); n > most {
			most, token, b = n, t, x
		}
	}
	return token, b
}

// watch is the stall watchdog: while calls are pending it looks at them
// every StallTimeout/8 and wakes those that received nothing for
// StallTimeout. It exits when no call is pending and is started again by
// the next call, so an idle client has no goroutine of its own.
func (c *Client) watch() {
	every := max(c.opts.StallTimeout/8, time.Millisecond)
	t := time.NewTicker(every)
	defer t.Stop()
	lost := c.connClosed
	for {
		var now time.Time
		select {
		case now = <-t.C:
		case _, ok := <-lost:
			// The connection closed for good (or Close removed the
			// listener): nothing reaches the pending calls any more.
			lost = nil
			if ok {
				c.connectionLost()
			}
			continue
		}
		c.mu.Lock()
		if len(c.pending) == 0 {
			c.watching = false
			c.mu.Unlock()
			return
		}
		for _, b := range c.pending {
			b.mu.Lock()
			silent := !b.stalled && len(b.msgs) == 0 && b.stallAfter > 0 && now.Sub(b.last) >= b.stallAfter
			if silent {
				b.stalled = true
			}
			b.mu.Unlock()
			if silent {
				b.notify()
			}
		}
		c.mu.Unlock()
	}
}

// connectionLost ends the pending calls: their connection closed for
// good.
func (c *Client) connectionLost() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.pending {
		b.mu.Lock()
		b.lost = true
		b.mu.Unlock()
		b.notify()
	}
}

// forget takes box out of byFirst; c.mu is held.
func (c *Client) forget(first string, box *inbox) {
	boxes := slices.DeleteFunc(c.byFirst[first], func(b *inbox) bool { return b == box })
	if len(boxes) == 0 {
		delete(c.byFirst, first)
	} else {
		c.byFirst[first] = boxes
	}
}

// Cancel asks the fleet to cancel a call. The call's iterator then ends
// with the worker's interrupted final. Cancel stops the calls of the id
// this client has at the time, also one waiting to be sent again after a
// lost or overloaded attempt: that one is not sent again and ends at
// once, interrupted (worker_lost when it would not have been sent again:
// its tool may have run). A call this client is not waiting for (an
// unknown id, or one whose final came) may be another client's call, a
// durable one waiting in the queue too (toolctl cancel): its cancel is
// recorded, so a call sent under that id afterwards ends interrupted
// without running, for 30 s on the core path (the workers' tombstone)
// and 24 h on the durable path (the cancels stream; an error wrapping
// ErrCancelNotRecorded says the stream refused the record, when full,
// also that of an attempt sent again that its worker queued, and Cancel
// waits for its answer at most 2 s). A call id is for one
// call: reusing one just cancelled, finished or not, is refused so, by
// the workers; the client itself sends a call started under the id after
// the Cancel as any other, and again after a lost or overloaded attempt.
func (c *Client) Cancel(callID string) error {
	// A call sent again runs under another id (attemptID): its attempt in
	// flight is cancelled too, and no further attempt starts.
	type attempt struct {
		id      string
		durable bool
	}
	var attempts []attempt
	c.mu.Lock()
	// The calls of the id there now, each with a stop of its own: a call
	// started under the id afterwards is not stopped by this Cancel.
	stops := c.retrying[callID]
	mine := len(stops) > 0
	for _, stop := range stops {
		if !stopped(stop) {
			close(stop)
		}
	}
	durable := false
	for _, b := range c.byFirst[callID] {
		mine = true
		b.cancelled = true // no attempt after this one
		if b.id != callID {
			attempts = append(attempts, attempt{b.id, b.durable.Load()})
		} else {
			durable = b.durable.Load()
		}
	}
	c.mu.Unlock()
	// Not this client's call: it may be another's, waiting in the queue.
	// The records go out together and their answers are awaited
	// together, recordWait in all.
	var err error
	var recs []*record
	recorded := func(id string) {
		rec, rerr := c.sendRecorded(id, "", "")
		err = errors.Join(err, rerr)
		if rec != nil {
			recs = append(recs, rec)
		}
	}
	if durable || !mine {
		recorded(callID)
	} else {
		err = c.cancel(callID, "", false, "")
	}
	for _, a := range attempts {
		if a.durable { // queued by its worker: recorded as the id's own
			recorded(a.id)
		} else {
			err = errors.Join(err, c.cancel(a.id, "", false, ""))
		}
	}
	for _, rec := range recs {
		err = errors.Join(err, rec.wait())
	}
	return err
}

// cancel publishes a call's cancel, which the workers hear at once; for a
// call that may wait in the durable queue, also its record in the cancels
// stream, which a worker that takes the call later reads (subjects.md:
// Durable calls).
//
// reply, when not "", is the reply subject of the call cancelled: the
// workers then cancel that call only, and a cancel reaching them after it
// ended spares a later call under the same id.
func (c *Client) cancel(callID, reason string, durable bool, reply string) error {
	if !wire.ValidCallID(callID) {
		return fmt.Errorf("bus: invalid call id %s", wire.Quote(callID))
	}
	// The record first: a server whose roles predate it refuses it, and
	// the refusal a caller then sees last is the cancel's, if any.
	var err error
	if durable {
		err = c.nc.PublishMsg(cancelMsg(wire.CancelledSubject(c.opts.Identity, callID), reason))
	}
	m := cancelMsg(wire.CancelSubject(c.opts.Identity, callID), reason)
	if reply != "" {
		m.Header.Set(wire.HeaderReply, reply)
	}
	return errors.Join(err, c.nc.PublishMsg(m))
}

// ErrCancelNotRecorded is the error (errors.Is) of a cancel of a durable
// call that went out, but whose record the cancels stream refused (full,
// or a record too large): a worker that takes the call from the durable
// queue later, without having heard the cancel, runs it.
var ErrCancelNotRecorded = errors.New("bus: the cancel was not recorded")

// recordWait bounds how long a cancel waits for the cancels stream's
// answer to its record (cancelRecorded).
const recordWait = 2 * time.Second

// cancelRecorded is cancel for a durable call whose caller learns whether
// the cancels stream kept the record: the record carries a reply subject
// of the client's inbox, and the stream's answer is awaited, at most
// recordWait, once the cancel went out. It returns ErrCancelNotRecorded
// (with the stream's reason) when the stream refused the record. No
// answer (a server whose roles predate the stream refuses the publish,
// which the flush brings back first; no stream at all) is as before:
// the cancel counts where it was heard.
func (c *Client) cancelRecorded(callID, reason, reply string) error {
	rec, err := c.sendRecorded(callID, reason, reply)
	if rec == nil {
		return err
	}
	return rec.wait()
}

// sendRecorded publishes the cancel of callID with its record, as
// cancelRecorded does, and returns the record whose answer is to be
// awaited (nil, with the error, when there is none to await: a publish
// failed, or the client is closed and the cancel went out unawaited).
// Cancels that go out together are awaited together (Cancel, Close).
func (c *Client) sendRecorded(callID, reason, reply string) (*record, error) {
	if !wire.ValidCallID(callID) {
		return nil, fmt.Errorf("bus: invalid call id %s", wire.Quote(callID))
	}
	c.mu.Lock()
	closed := c.closed
	var rec *record
	if !closed {
		rec = c.recordLocked(callID)
	}
	c.mu.Unlock()
	if closed {
		return nil, c.cancel(callID, reason, true, reply)
	}
	if err := rec.publish(reason, reply); err != nil {
		c.forgetAck(rec.ackTo)
		return nil, err
	}
	return rec, nil
}

// notRecorded is what a call's final adds when err, its cancel's, says
// the cancels stream refused the record: the call may still run. "" for
// any other err.
func notRecorded(err error) string {
	if !errors.Is(err, ErrCancelNotRecorded) {
		return ""
	}
	return " " + strings.TrimPrefix(err.Error(), "bus: ") + "."
}

// cancelEnding is cancel for a call the client ends itself: for a call
// that may wait in the durable queue, the cancels stream's answer to its
// record is awaited (cancelRecorded), and what the call's final adds is
// returned (notRecorded).
func (c *Client) cancelEnding(callID, reason string, durable bool, reply string) string {
	if !durable {
		c.cancel(callID, reason, false, reply)
		return ""
	}
	return notRecorded(c.cancelRecorded(callID, reason, reply))
}

// recordedAgain is what the final of a call cancelled in onMsg adds
// (cancelEnding): onMsg, which must not wait, published a durable call's
// record without awaiting the stream's answer, so the caller's path
// publishes it again (a record replaces its call's own, also in a full
// stream) and awaits the answer.
func (c *Client) recordedAgain(callID string, durable bool, reply string) string {
	if !durable {
		return ""
	}
	return c.cancelEnding(callID, "", true, reply)
}

// record is a durable call's cancel with its record, whose answer from
// the cancels stream is awaited.
type record struct {
	c      *Client
	callID string
	ackTo  string // the record's reply subject
	ch     chan ackReply
	until  time.Time
}

// recordLocked awaits the answer to the record of the cancel of callID (a
// valid id), which publish then sends; c.mu is held, also by Close, which
// awaits its records before it ends the acknowledgements awaited.
func (c *Client) recordLocked(callID string) *record {
	ackTo, ch := c.awaitAckLocked()
	return &record{c: c, callID: callID, ackTo: ackTo, ch: ch}
}

// publish publishes the record, with its reply subject, and the cancel.
func (r *record) publish(reason, reply string) error {
	c := r.c
	rec := cancelMsg(wire.CancelledSubject(c.opts.Identity, r.callID), reason)
	rec.Reply = r.ackTo
	err := c.nc.PublishMsg(rec)
	m := cancelMsg(wire.CancelSubject(c.opts.Identity, r.callID), reason)
	if reply != "" {
		m.Header.Set(wire.HeaderReply, reply)
	}
	if err = errors.Join(err, c.nc.PublishMsg(m)); err != nil {
		return err
	}
	r.until = time.Now().Add(recordWait)
	return nil
}

// wait awaits the stream's answer to the record until recordWait has
// passed since it went out, as cancelRecorded tells.
func (r *record) wait() error {
	defer r.c.forgetAck(r.ackTo)
	t := time.NewTimer(max(time.Until(r.until), 0))
	defer t.Stop()
	var a ackReply
	select {
	case a = <-r.ch:
	default:
		// The flush brings back a refusal of the publish (older roles),
		// which no answer follows.
		ferr := r.c.nc.FlushTimeout(max(time.Until(r.until), time.Millisecond))
		if le := r.c.nc.LastError(); ferr != nil || errors.Is(le, nats.ErrPermissionViolation) && strings.Contains(le.Error(), wire.CancelledSubject(r.c.opts.Identity, r.callID)) {
			return nil
		}
		select {
		case a = <-r.ch:
		case <-t.C:
			return nil
		}
	}
	if a.err != nil {
		return nil
	}
	var apiErr *jetstream.APIError
	if _, err := pubAck(a.m); errors.As(err, &apiErr) {
		return fmt.Errorf("%w: the cancel of %s went out, but the %s stream refused its record (%s), so a worker that takes the call from the durable queue later runs it", ErrCancelNotRecorded, wire.Quote(r.callID), wire.StreamCancels, apiErr.Description)
	}
	return nil
}

// Revision returns the latest groups revision the client has seen for a
// session (from reset_tools finals), sent with the session's calls; 0
// when it has none. The client forgets a session's revision when it
// remembers too many sessions (ClientOptions.MaxSessions) and when the
// groups bucket was made again: its revisions then count from 1, and a
// revision of the old bucket would make the session's calls wait for a
// revision the new one has not reached.
func (c *Client) Revision(session string) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, _ := c.revs.get(session)
	return r.rev
}

// Invoke runs a call and returns only its final response.
func (c *Client) Invoke(ctx context.Context, call toolkit.ToolCall) *toolkit.Response {
	var final *toolkit.Response
	for ev := range c.Call(ctx, call) {
		final = ev.Final
	}
	return final
}

// Call publishes a call and yields its chunks and progress reports as they
// arrive, then exactly one final Response (Event.Final) whose ID is the
// call ID; an empty call.ID is filled with a unique one. Every way a call
// can go wrong ends in that final, never in a Go error:
//
//   - no worker serves the tool: unavailable at once (not_found when
//     workers are up but none has the tool);
//   - the request is over the server's max_payload: invalid_input;
//   - no frame for StallTimeout: worker_lost, and a cancel is published
//     (with KeepResult, the call's kept final when there is one: its
//     final frame was lost on the way);
//   - ctx is cancelled or its deadline passes: a cancel is published and
//     the worker's interrupted or timeout final is awaited for CancelGrace.
//
// A durable call's cancel, the caller's or one the client sends as it
// ends the call itself, is recorded in the cancels stream for a worker
// that takes the call from the queue later; when the stream refuses the
// record (full), the final says after its message that the cancel was
// not recorded (ErrCancelNotRecorded's words): the call may still run.
//
// A fast call travels as one message, the final with the whole result;
// the client still yields its content as one chunk event first (see
// finalChunk), so a consumer sees chunks then the final over the bus as in
// process. Chunk frames that never arrived are counted in the final's
// metadata (wire.MetaLostChunks) and logged. A call sent again (see
// ClientOptions.MaxAttempts), or a durable call delivered again, runs its
// tool from the start, whose progress reports would repeat what the caller
// saw: progress never goes back over a call, a later attempt's report
// being yielded only when its Progress is above the highest yielded
// before (the first attempt's come as they are). Stopping the iteration early
// cancels the call. Each ranging over the sequence sends the call anew
// (with an empty call.ID, under a new id each time), also on several
// goroutines at once.
func (c *Client) Call(ctx context.Context, call toolkit.ToolCall) iter.Seq[toolkit.Event] {
	return func(yield func(toolkit.Event) bool) {
		call := call // each ranging is a call of its own, with its own id
		if call.ID == "" {
			call.ID = nuid.Next()
		}
		chunks := false
		var floor progressFloor // the call's progress, over its attempts
		pass := func(ev toolkit.Event) bool {
			chunks = chunks || ev.Chunk != nil
			if ev.Progress != nil && !floor.let(ev.Progress) {
				return true // a resent attempt's report, not past what the caller saw
			}
			return yield(ev)
		}
		attempt := call
		var since uint64 // for noteRevision
		if call.Name == toolkit.MetaToolName {
			_, since = c.sessionRevision(call.Session)
		}
		var final, answer *toolkit.Response // the call's final; its last attempt's
		var lost *toolkit.Response          // an earlier attempt's worker_lost (it may have run) or drained final
		var stop chan struct{}              // closed by Cancel(call.ID) once the call may be sent again
		defer func() {
			if stop != nil {
				c.doneRetrying(call.ID, stop)
			}
		}()
		for n := 1; ; n++ {
			durable, cancelled := call.Durable, false
			if final = c.run(ctx, attempt, call.ID, pass, &floor, &durable, &cancelled, &stop); final == nil {
				return
			}
			if c.afterRun != nil {
				c.afterRun(attempt.ID)
			}
			if cancelled && retryable(final) && !drained(final) && (refusedForLoad(final) ||
				n < c.opts.MaxAttempts && !chunks && !durable && c.resends(ctx, call.Name)) {
				// The cancel stopped a resend. A lost attempt that would not
				// have been sent again stays worker_lost: the tool may have
				// run, whatever the cancel.
				final = cancelledBeforeRetry(attempt.ID)
			}
			if workerLost(final) || drained(final) {
				lost = final
			}
			// A durable call was delivered again by the queue already. A
			// drained final that came after the call's Cancel is its answer
			// (interrupted, as the cancel would have it).
			again := n < c.opts.MaxAttempts && !chunks && !durable && retryable(final) && !(cancelled && drained(final))
			if retryable(final) && stop == nil {
				// Unless run registered it already (as the attempt stopped
				// pending, so that a Cancel in between is not lost).
				stop = c.mayRetry(call.ID)
			}
			if again && (!c.retry(ctx, call.Name, final, stop) || stopped(stop)) {
				if stopped(stop) && !drained(final) && (refusedForLoad(final) || c.resends(ctx, call.Name)) {
					// The cancel stopped a resend (as above: a lost attempt
					// that would not have been sent again stays worker_lost).
					final = cancelledBeforeRetry(call.ID)
				}
				again = false
			}
			if !again {
				answer = final
				if lost != nil && notRun(final) {
					// This attempt did not run the tool (an approved call's
					// approval was used by the lost attempt; no worker
					// serves the tool now; the fleet is overloaded; the
					// client was closed before sending it). It says nothing
					// of the lost attempt, which may have run, nor of a
					// drained one, which its worker's stop cut: the call
					// ends as that one did. (A tool that answered so itself
					// ran: its answer is the call's.)
					final = lost
				}
				if n > 1 {
					final.ID = call.ID
					if final.Metadata == nil {
						final.Metadata = map[string]any{}
					}
					final.Metadata[wire.MetaAttempts] = n
				}
				break
			}
			attempt.ID, attempt.IdempotencyKey = attemptID(call.ID, n+1), call.Key()
			floor.again = true
		}
		c.noteRevision(call, final, since)
		if answer.Code == toolkit.CodeUnavailable && strings.HasPrefix(answer.Text(), groupStateError) {
			// Perhaps the worker could not reach the revision the call
			// carried (a groups bucket made again): the session's next
			// calls then go without it. Other failures (a tool's timeout,
			// the client's own no-responders answer) say nothing of it and
			// are not held up by the question.
			if _, worker := answer.Metadata[wire.MetaWorker]; worker {
				c.staleRevision(ctx, call.Session, c.Revision(call.Session))
			}
		}
		c.notePin(call, final)
		if !chunks && len(final.Content) > 0 && !yield(toolkit.Event{Chunk: finalChunk(final)}) {
			return
		}
		yield(toolkit.Event{Final: final})
	}
}

// enqueue publishes a durable call into the calls stream; it returns the
// final when the stream did not take it. A call sent again after its
// approval sets stale to the revision of its kept approval_required
// final: a kept final up to it is not this call's. seq is set to the
// call's sequence in the calls stream once it is stored.
func (c *Client) enqueue(ctx context.Context, call toolkit.ToolCall, reply string, hdr nats.Header, data []byte, stale, seq *uint64) *toolkit.Response {
	js, err := c.jetStream()
	if err != nil {
		return toolkit.Final(call.ID, toolkit.CodeUnavailable, fmt.Sprintf("ToolUnavailableError: the durable path needs JetStream: %v", err))
	}
	if final := c.unserved(ctx, js, call); final != nil {
		return final
	}
	h := hdr // the call's own: run makes it for this call
	if h == nil {
		h = make(nats.Header, 2)
	}
	h.Set(wire.HeaderReply, reply)
	h.Set(jetstream.MsgIDHeader, callKey(c.opts.Identity, call.ID))
	// The stream may be without a leader for a moment (a node restarting):
	// publishing again is safe, the message id deduplicates.
	until := time.Now().Add(c.opts.QueueWait)
	msg := &nats.Msg{Subject: wire.DurableSubject(call.Name, c.opts.Identity), Header: h, Data: data}
	ack, _, uncertain, err := queueCall(ctx, js, c.publish, until, msg)
	if err == nil && ack.Duplicate && !uncertain {
		// Sent again after its approval: queued under an id of its own.
		b, _ := c.resultsBucket(ctx)
		if id, rev, ok := approvalResend(ctx, js, b, wire.ResultKey(c.opts.Identity, call.ID), h.Get(jetstream.MsgIDHeader)); ok {
			h.Set(jetstream.MsgIDHeader, id)
			*stale = rev
			ack, _, uncertain, err = queueCall(ctx, js, c.publish, until, msg)
		}
	}
	switch {
	case errors.Is(err, errNoJetStream):
		return toolkit.Final(call.ID, toolkit.CodeUnavailable, "ToolUnavailableError: "+err.Error()+"; send the call without durable.")
	case err != nil && uncertain && ctx.Err() == nil:
		// An attempt went unanswered: the stream may have stored the call,
		// which would then run with nobody waiting for its answer. The
		// workers that see the cancel first answer it interrupted instead.
		note := c.cancelEnding(call.ID, "", true, reply)
		return toolkit.Final(call.ID, toolkit.CodeUnavailable, fmt.Sprintf(
			"ToolUnavailableError: the calls stream did not acknowledge the durable call (%v); it may have been stored all the same, so a cancel was sent for it. Should it run anyway, its final is kept under its id (Client.Result, toolctl result). Send it again later under a new call id.", err)+note)
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		if time.Now().After(until) && ctx.Err() == nil {
			return toolkit.Final(call.ID, toolkit.CodeUnavailable, fmt.Sprintf(
				"ToolUnavailableError: the calls stream did not take the durable call within %s (no stream leader); retry later.", c.opts.QueueWait))
		}
		return toolkit.Final(call.ID, toolkit.CodeUnavailable,
			"ToolUnavailableError: the durable path is not available: no worker has created the calls stream (a worker does on a NATS server with JetStream, unless its group state is in memory or durable.off is set); send the call without durable, or start such a worker.")
	case errors.Is(err, nats.ErrMaxPayload):
		return toolkit.Final(call.ID, toolkit.CodeInvalidInput, fmt.Sprintf(
			"RequestTooLargeError: the call's request is %d bytes, over the server's max_payload of %d bytes; send less input.", len(data)+headerSize(h), c.nc.MaxPayload()))
	case kv.Full(err):
		// Refused, not stored: the calls already queued run first.
		r := toolkit.Final(call.ID, toolkit.CodeOverloaded, queueFullText(err))
		r.Metadata = map[string]any{wire.MetaRetryAfterMS: queueFullRetry.Milliseconds()}
		return r
	case err != nil:
		if ctx.Err() != nil {
			// An attempt may still be stored: the workers that see the
			// cancel first answer it interrupted instead of running it.
			reason := ""
			if deadlinePassed(ctx) {
				reason = wire.CancelReasonDeadline
			}
			note := c.cancelEnding(call.ID, reason, true, reply)
			r := c.ctxFinal(ctx, call.ID, nil)
			r.Content[len(r.Content)-1].Text += note
			return r
		}
		return toolkit.Final(call.ID, toolkit.CodeUnavailable, fmt.Sprintf("ToolUnavailableError: the durable call could not be queued: %v", err))
	case ack.Duplicate && !uncertain: // after an unanswered try, the duplicate is that try, stored
		return duplicateCall(call.ID)
	}
	*seq = ack.Sequence
	return nil
}

// enqueueWait is ClientOptions.QueueWait's default.
const enqueueWait = 30 * time.Second

// jetStream is the client's JetStream context, made on first use.
func (c *Client) jetStream() (jetstream.JetStream, error) {
	c.fleetMu.Lock()
	defer c.fleetMu.Unlock()
	if c.js == nil {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return nil, errClientClosed
		}
		js, err := jetstream.New(c.nc)
		if err != nil {
			return nil, err
		}
		c.js = js
		c.status = c.nc.StatusChanged(nats.RECONNECTING, nats.CLOSED)
		go c.watchConnection(c.status)
	}
	return c.js, nil
}

// retry reports whether a call whose attempt ended with final is sent
// again (see ClientOptions.MaxAttempts), after waiting what the final asks
// (retry_after_ms); false when the wait would pass the call's deadline.
func (c *Client) retry(ctx context.Context, tool string, final *toolkit.Response, stop <-chan struct{}) bool {
	var wait time.Duration
	switch final.Code {
	case toolkit.CodeWorkerLost:
		if !workerLost(final) {
			return false
		}
	case toolkit.CodeInterrupted:
		if !drained(final) {
			return false
		}
	case toolkit.CodeOverloaded:
		select {
		case <-c.closing:
			// Closed before the wait (where the fleet is gone too): the
			// next attempt finds the client closed, as after the wait.
			return true
		default:
		}
		if ms, ok := asUint64(final.Metadata[wire.MetaRetryAfterMS]); ok {
			if ms > uint64(maxRetryWait/time.Millisecond) {
				return false // "not for a while" (in ns it may overflow a Duration)
			}
			wait = time.Duration(ms) * time.Millisecond
		}
	default:
		return false
	}
	if !c.resends(ctx, tool) {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= wait {
		return false
	}
	if wait > 0 && !c.waitRetry(ctx, wait, stop) {
		return false
	}
	return ctx.Err() == nil
}

// waitRetry waits out an overloaded attempt's retry_after_ms before the
// call is sent again; false when ctx ends or stop closes first. Close
// ends the wait: the next attempt finds the client closed.
func (c *Client) waitRetry(ctx context.Context, wait time.Duration, stop <-chan struct{}) bool {
	var over <-chan time.Time
	if c.retryTimer != nil {
		ch, stopTimer := c.retryTimer(wait)
		defer stopTimer()
		over = ch
	} else {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		over = timer.C
	}
	select {
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	case <-c.closing:
	case <-over:
	}
	return true
}

// resends reports whether the fleet's announcements let the client send
// a call of tool again: it is read-only or declared idempotent.
func (c *Client) resends(ctx context.Context, tool string) bool {
	f, err := c.Fleet(ctx)
	if err != nil {
		return false
	}
	t, ok := f.ToolInfo(tool)
	return ok && (t.ReadOnly || t.IdempotencyLevel().Retryable())
}

// maxRetryWait is the longest retry_after_ms the client waits out itself;
// a worker that asks for more ends the call overloaded.
const maxRetryWait = 2 * time.Second

// mayRetry registers one Call of id (the id its caller gave) as one the
// client may send again; the Call passes the channel returned to
// doneRetrying when it ends. Until then Cancel(id) closes it, which stops
// that Call's retries. Each Call has a stop of its own (a caller may
// reuse an id while its earlier call runs): a Cancel stops the Calls of
// the id registered at the time, not one registered after it.
func (c *Client) mayRetry(id string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mayRetryLocked(id)
}

func (c *Client) mayRetryLocked(id string) chan struct{} {
	if c.retrying == nil {
		c.retrying = map[string][]chan struct{}{}
	}
	stop := make(chan struct{})
	c.retrying[id] = append(c.retrying[id], stop)
	return stop
}

// doneRetrying forgets the Call of id which mayRetry returned stop for.
func (c *Client) doneRetrying(id string, stop chan struct{}) {
	c.mu.Lock()
	stops := slices.DeleteFunc(c.retrying[id], func(s chan struct{}) bool { return s == stop })
	if len(stops) == 0 {
		delete(c.retrying, id)
	} else {
		c.retrying[id] = stops
	}
	c.mu.Unlock()
}

// stopped reports whether stop is closed; false for nil.
func stopped(stop chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// progressFloor keeps a call's progress from going back when it starts
// over: an attempt sent again (Call), or a durable call delivered again,
// runs its tool from the start, whose reports would repeat what its
// caller saw of the earlier attempt (MCP, whose gateway passes them on,
// has progress only ever grow). Once the call started over, a report is
// passed on only when its progress is above the highest passed on so
// far; until then the call started over, a tool's reports are passed on
// as they come.
type progressFloor struct {
	top   float64 // the highest progress passed on
	seen  bool    // a report was passed on
	again bool    // the call started over
}

// let reports whether p goes to the caller, and notes it when it does.
func (f *progressFloor) let(p *toolkit.Progress) bool {
	if f.again && f.seen && !(p.Progress > f.top) {
		return false
	}
	if !math.IsNaN(p.Progress) && (!f.seen || p.Progress > f.top) {
		f.top, f.seen = p.Progress, true
	}
	return true
}

// cancelledBeforeRetry is the final of a call whose Cancel came before
// the client sent it again.
func cancelledBeforeRetry(id string) *toolkit.Response {
	return toolkit.Final(id, toolkit.CodeInterrupted, "InterruptedError: the call was cancelled before it was sent again.")
}

// notRun reports whether final, of an attempt sent again after a lost
// one, says that attempt's tool did not run: its answer then says nothing
// of the call, whose lost attempt may have run. Its code says so unless
// its worker says the tool ran (wire.MetaToolRan: the tool answered with
// that code itself; a worker of an earlier build does not say).
func notRun(final *toolkit.Response) bool {
	switch final.Code {
	case toolkit.CodeApprovalRequired, toolkit.CodeUnavailable, toolkit.CodeOverloaded, toolkit.CodeNotFound:
		return final.Metadata[wire.MetaToolRan] != true
	}
	return false
}

// retryable reports whether final may be retried by the client
// (worker_lost, overloaded, drained); retry decides.
func retryable(final *toolkit.Response) bool {
	return workerLost(final) || final.Code == toolkit.CodeOverloaded || drained(final)
}

// workerLost reports whether final says the worker that took the attempt
// went silent (worker_lost): it may have run, and a read-only or
// idempotent call is sent again. Not when its worker says the tool ran
// (wire.MetaToolRan), which a worker never says of a worker_lost of its
// own: a worker of an earlier build passes on one its tool answered
// itself (a worker of this build sends that tool_error), which is the
// call's answer.
func workerLost(final *toolkit.Response) bool {
	return final.Code == toolkit.CodeWorkerLost && final.Metadata[wire.MetaToolRan] != true
}

// refusedForLoad reports whether final is an overloaded answer given
// before the call's tool ran (a worker's in-flight limit, a rate-limiting
// middleware): the call did not run, whatever its tool, so a Cancel
// before it was sent again ends it interrupted. An overloaded answer with
// wire.MetaToolRan is the tool's own, after its run (an upstream refusing
// it for load): sent again as other attempts are, only for a read-only or
// idempotent tool, and the call's answer otherwise.
func refusedForLoad(final *toolkit.Response) bool {
	return final.Code == toolkit.CodeOverloaded && final.Metadata[wire.MetaToolRan] != true
}

// drained reports whether final is the interrupted final of a call its
// worker's stop ended (wire.MetaDrained), not its caller's cancel: sent
// again, like a lost worker's, when its tool may run twice.
func drained(final *toolkit.Response) bool {
	return final.Code == toolkit.CodeInterrupted && final.Metadata[wire.MetaDrained] == true
}

// attemptID is the id of the nth attempt of call id: its own, so that the
// cancel of a lost attempt leaves the next alone (also for an id of the
// longest length that ends in the suffix, cut one more character).
func attemptID(id string, n int) string {
	suffix := "-r" + strconv.Itoa(n)
	a := id[:min(len(id), wire.MaxCallIDLen-len(suffix))] + suffix
	if a == id {
		a = id[:len(id)-len(suffix)-1] + suffix
	}
	return a
}

// finalChunk is the one chunk event of a call that yielded none: the
// final's content, with the final's state when it is error, interrupted
// or denied (running otherwise), so accumulating the chunk events gives
// the final's content and state. Metadata stays on the final.
func finalChunk(r *toolkit.Response) *toolkit.Chunk {
	var c *toolkit.Chunk
	if len(r.Content) == 1 { // the chunk and its copy of the block in one allocation
		cb := &struct {
			c toolkit.Chunk
			b [1]toolkit.Block
		}{b: [1]toolkit.Block{r.Content[0]}}
		c = &cb.c
		c.Content = cb.b[:]
	} else {
		c = &toolkit.Chunk{Content: slices.Clone(r.Content)}
	}
	c.State = toolkit.StateRunning
	switch r.State {
	case toolkit.StateError, toolkit.StateInterrupted, toolkit.StateDenied:
		c.State = r.State
	}
	return c
}

// run does the call; it returns the final to yield, or nil when the
// consumer stopped the iteration. It reports through durable that the
// queue delivered the call again itself, and through cancelled that
// Cancel(first) came while the call was pending (its cancel may have
// reached no one: a lost worker). When the call may be sent again, it
// registers first as retrying for its Call, once (*retry, see mayRetry).
// It notes in floor a delivery again of a durable call, whose progress
// starts over.
func (c *Client) run(ctx context.Context, call toolkit.ToolCall, first string, yield func(toolkit.Event) bool, floor *progressFloor, durable, cancelled *bool, retry *chan struct{}) (final *toolkit.Response) {
	if !wire.ValidCallID(call.ID) {
		return toolkit.Final(call.ID, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the call id %s is invalid: it must be 1-%d characters of [A-Za-z0-9_-].", wire.Quote(call.ID), wire.MaxCallIDLen))
	}
	if !toolkit.ValidToolName(call.Name) {
		return notFound(call) // a longer subject would make NATS close the connection
	}
	if err := ctx.Err(); err != nil {
		return c.ctxFinal(ctx, call.ID, nil)
	}
	eb := getBuf()
	defer putBuf(eb)
	data, err := wire.Msgpack.Append(eb.b[:0], &wire.Request{ID: call.ID, Input: call.Input, RawInput: call.RawInput, Session: call.Session, Key: call.IdempotencyKey, More: true})
	eb.b = data
	if err != nil {
		return toolkit.Final(call.ID, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the input cannot be encoded: %v", err))
	}
	var rb [96]byte
	reply := string(strconv.AppendUint(append(rb[:0], c.prefix...), c.next.Add(1), 36))
	token := reply[len(c.prefix):]
	box := inboxPool.Get().(*inbox)
	box.msgs, box.last, box.id, box.first, box.stallAfter = box.spare[0][:0], time.Now(), call.ID, first, c.opts.StallTimeout
	box.limit, box.total = c.opts.MaxPending, &c.queued
	box.durable.Store(call.Durable)
	buf := box.spare[1][:0]
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		box.reset(buf)
		inboxPool.Put(box)
		return toolkit.Final(call.ID, toolkit.CodeUnavailable, "ToolUnavailableError: the client is closed.")
	}
	if first != call.ID && stopped(*retry) {
		// Cancel(first) came before this attempt was pending.
		c.mu.Unlock()
		box.reset(buf)
		inboxPool.Put(box)
		return cancelledBeforeRetry(call.ID)
	}
	c.pending[token] = box
	c.byFirst[first] = append(c.byFirst[first], box)
	if !c.watching {
		c.watching = true
		go c.watch()
	}
	remembered, _ := c.revs.get(call.Session) // as Revision, under the same lock
	rev := max(call.GroupsRevision, remembered.rev)
	var pinned string // the worker the call is sent to directly: its session's pin
	if !call.Durable && c.bound[call.Name] {
		pinned, _ = c.pins.get(toolkit.SessionScope(c.opts.Identity, call.Session))
	}
	c.mu.Unlock()
	defer func() {
		if final == nil {
			// The consumer stopped: a break, or a panic in its loop body,
			// which unwinds through here all the same. The tool need not
			// run on for nobody; no final says that a durable call's
			// cancel was not recorded, a warning does.
			if note := c.cancelEnding(call.ID, "", *durable, reply); note != "" {
				c.log.Warn("bus: a durable call its caller stopped may still run"+note, "call", call.ID)
			}
		}
		c.mu.Lock()
		delete(c.pending, token)
		c.forget(first, box)
		*cancelled = box.cancelled
		if final != nil && retryable(final) && !box.cancelled && *retry == nil {
			// The call may be sent again: from this moment Cancel(first)
			// finds it among the retrying, not in neither (Call).
			*retry = c.mayRetryLocked(first)
		}
		c.mu.Unlock()
		box.reset(buf)
		inboxPool.Put(box)
	}()

	// Headers only when they say something: a request without any is a
	// plain PUB, cheaper for the client, the server and the worker.
	var hdr nats.Header
	if c.hbHdr != "" {
		hdr = nats.Header{wire.HeaderHeartbeat: {c.hbHdr}}
	}
	if rev > 0 {
		hdr = setHeader(hdr, wire.HeaderGroupsRevision, strconv.FormatUint(rev, 10))
	}
	if call.KeepResult {
		keepAs := "1"
		if call.ID != first {
			keepAs = first // a retry: kept under the id its caller knows
		}
		hdr = setHeader(hdr, wire.HeaderKeepResult, keepAs)
	}
	if dl, ok := ctx.Deadline(); ok {
		ms := int64(math.Ceil(float64(time.Until(dl)) / float64(time.Millisecond)))
		hdr = setHeader(hdr, wire.HeaderTimeout, strconv.FormatInt(max(ms, 0), 10))
	}
	hdr = injectTrace(ctx, hdr)

	var stale uint64     // a kept final up to it is an earlier send's (enqueue)
	var queued uint64    // the durable call's sequence in the calls stream (enqueue)
	var stored time.Time // when queued was known stored
	sent := time.Now()   // before the call was sent: queued was stored after
	if call.Durable {
		if final := c.enqueue(ctx, call, reply, hdr, data, &stale, &queued); final != nil {
			return final
		}
		stored = time.Now()
		// Silent from when it was stored: an enqueue that took a stall
		// timeout (a burst of calls, a stream without a leader for a
		// moment) is no silence of the queue's, and a look asked before
		// the call was stored cannot answer it (settled).
		box.mu.Lock()
		box.last, box.stalled = stored, false
		box.mu.Unlock()
	} else {
		subject := wire.CallSubject(call.Name, c.opts.Identity)
		if pinned != "" {
			subject = wire.PinnedSubject(pinned, call.Name, c.opts.Identity)
		}
		if hdr == nil {
			err = c.nc.PublishRequest(subject, reply, data)
		} else {
			err = c.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Header: hdr, Data: data})
		}
	}
	if err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			return toolkit.Final(call.ID, toolkit.CodeInvalidInput, fmt.Sprintf(
				"RequestTooLargeError: the call's request is %d bytes, over the server's max_payload of %d bytes; send less input.",
				len(data)+headerSize(hdr), c.nc.MaxPayload()))
		}
		return toolkit.Final(call.ID, toolkit.CodeUnavailable, fmt.Sprintf("ToolUnavailableError: the call could not be sent: %v", err))
	}

	st := callState{id: call.ID, bound: c.opts.MaxResultBytes}
	defer st.endAsks()
	ctxDone := ctx.Done()
	var grace <-chan time.Time // after a cancel: how long the worker's final is awaited
	var unrecorded error       // the cancel's record, refused
	for {
		if ctxDone == nil && grace == nil {
			<-box.signal
		} else {
			select {
			case <-box.signal:
			case <-ctxDone:
				ctxDone = nil
				reason := ""
				if deadlinePassed(ctx) {
					reason = wire.CancelReasonDeadline
				}
				if *durable {
					unrecorded = c.cancelRecorded(call.ID, reason, reply)
				} else {
					c.cancel(call.ID, reason, false, reply)
				}
				t := time.NewTimer(c.opts.CancelGrace)
				defer t.Stop()
				grace = t.C
				continue
			case <-grace:
				if note := notRecorded(unrecorded); note != "" {
					// Still queued, perhaps: it may run later.
					e := toolkit.ContextError(ctx)
					return st.partial(e.Code, e.Message+note)
				}
				return c.ctxFinal(ctx, call.ID, &st)
			}
		}
		msgs, closed, lost, stalled, over := box.take(buf)
		buf = msgs
		for _, m := range msgs {
			if isNoResponders(m) {
				if pinned == "" {
					return c.noResponders(ctx, call)
				}
				// The session's worker is gone: through the queue group,
				// whose worker takes the session over.
				c.forgetPin(call, pinned)
				hdr = setHeader(hdr, wire.HeaderPinLost, pinned)
				pinned = ""
				err = c.nc.PublishMsg(&nats.Msg{Subject: wire.CallSubject(call.Name, c.opts.Identity), Reply: reply, Header: hdr, Data: data})
				if err != nil {
					return toolkit.Final(call.ID, toolkit.CodeUnavailable, fmt.Sprintf("ToolUnavailableError: the call could not be sent: %v", err))
				}
				continue
			}
			var f wire.Frame
			if err := decodeFrame(&f, m); err != nil {
				c.log.Warn("bus: dropping an undecodable frame", "call", call.ID, "err", err)
				continue
			}
			if f.ID != call.ID && f.ID != "" {
				// Another call's (a worker that mixed its calls up):
				// numbered as this call's, it would end it with its final
				// and have its frames dropped as old. "" is a worker's
				// that could not read the request.
				c.log.Warn("bus: dropping a frame of another call", "call", call.ID, "frame", wire.Quote(f.ID))
				continue
			}
			if f.Kind == wire.KindQueued && f.Stream > 0 && !call.Durable {
				// Queued by its worker: the client's own enqueue knows
				// it. Read before the delivery check: the frames of the
				// worker the queue delivered it to may come first.
				queued, stored = f.Stream, time.Now()
			}
			if f.Attempt != st.attempt {
				if f.Attempt < st.attempt {
					continue // a late frame of an earlier delivery
				}
				st.next(&f)
				floor.again = floor.again || f.Attempt > 1 // delivered again: its tool starts over
				*durable = true
				box.durable.Store(true)
			}
			if f.Seq <= st.last {
				// A duplicate or an old frame, but for a final: the
				// fleet's answer to a durable call whose deliveries ran
				// out comes from another worker than the last
				// delivery's, as of that delivery and numbered 1 (it
				// cannot know what the lost worker sent); and a frame
				// numbered far ahead (a worker's numbering gone wrong,
				// or a frame anyone published to the inbox) would
				// otherwise drop the call's final, which ends worker_lost.
				// The call ends at its first final, so no second one
				// gets through.
				if f.Kind != wire.KindFinal {
					continue
				}
			} else if f.Seq != st.last+1 {
				c.log.Warn("bus: frames lost", "call", call.ID, "missing", f.Seq-st.last-1)
			}
			st.last = f.Last()
			switch f.Kind {
			case wire.KindChunk:
				ok := st.chunk(f.Chunk, yield)
				for i := 0; ok && i < len(f.More); i++ {
					ok = st.chunk(&f.More[i], yield)
				}
				if ok {
					break
				}
				if st.over {
					note := c.cancelEnding(call.ID, "", *durable, reply)
					return st.partial(toolkit.CodeToolError, fmt.Sprintf(
						"ToolOutputTooLargeError: the output of '%s' passed the limit of %d bytes one call may return here (ClientOptions.MaxResultBytes), so the call was cancelled.",
						call.Name, c.opts.MaxResultBytes)+note)
				}
				return nil
			case wire.KindProgress:
				if !yield(toolkit.Event{Progress: f.Progress}) {
					return nil
				}
			case wire.KindAsk:
				c.ask(ctx, &st, f.Ask)
			case wire.KindLog:
				if !yield(toolkit.Event{Log: f.Log}) {
					return nil
				}
			case wire.KindQueued:
				*durable = true
				box.durable.Store(true)
			case wire.KindFinal:
				if (*durable || call.KeepResult) && f.Chunks > st.chunks {
					// Chunks were lost on the way (a reconnect): the kept
					// final is whole (a core call's is stored before its
					// final is sent, under the id its caller gave). A
					// durable call's is published without waiting for the
					// bucket, so the caller holding the final may read
					// before it is stored: look again. It is its own only
					// with its reply subject (kept): one whose worker kept
					// nothing finds an earlier call's.
					if r, ok := c.kept(ctx, first, stale, keptBy{reply: reply, anyOld: *durable}, true); ok {
						r.ID = call.ID
						return r
					}
				}
				r := st.final(c, &f)
				if st.attempt > 1 {
					if r.Metadata == nil {
						r.Metadata = map[string]any{}
					}
					r.Metadata[wire.MetaAttempts] = st.attempt
				}
				return r
			}
		}
		switch {
		case closed:
			return st.partial(toolkit.CodeUnavailable, "ToolUnavailableError: the client was closed during the call.")
		case lost:
			return st.partial(toolkit.CodeUnavailable, "ToolUnavailableError: the client's NATS connection was closed during the call (the tool may have run).")
		case over == overCall: // cancelled when it went over (onMsg)
			return st.partial(toolkit.CodeInterrupted, fmt.Sprintf(
				"SlowConsumerError: the output of '%s' arrived faster than its caller took it: over %d bytes waited unread (ClientOptions.MaxPending), so the call was cancelled; its tool may have finished before the cancel reached it (a final after that is not taken), so it may have taken effect.",
				call.Name, c.opts.MaxPending)+c.recordedAgain(call.ID, *durable, reply))
		case over == overTotal: // cancelled when it was shed (onMsg)
			return st.partial(toolkit.CodeInterrupted, fmt.Sprintf(
				"SlowConsumerError: the output of '%s' arrived faster than its caller took it: the client's calls together had over %d bytes waiting unread (ClientOptions.MaxPendingTotal), this call the most and its final not yet among them, so its unread output was dropped and the call was cancelled; its tool may have finished before the cancel reached it (a final after that is not taken), so it may have taken effect.",
				call.Name, c.opts.MaxPendingTotal)+c.recordedAgain(call.ID, *durable, reply))
		case stalled && grace == nil && *durable:
			// Silence on the durable path: the final may have been lost
			// on its way (it is kept), or the call waits in the queue, or
			// it will be delivered again. Only silence on its last
			// delivery with nothing kept ends it. A call no worker was
			// heard of that its tool's consumer has not delivered has no
			// final kept: a backlog of queued calls reads none of them.
			if st.attempt > 0 || !c.undelivered(ctx, call.Name, queued, sent, stored) {
				if r, ok := c.kept(ctx, call.ID, stale, keptBy{reply: reply, anyOld: true}, false); ok {
					return r
				}
			}
			if st.attempt > 0 && c.settled(ctx, call.Name, queued, stored) {
				// A worker took it and the queue is done with it, but no
				// final came and none is kept (the server that kept it
				// restarted: kept finals are in memory storage; or its
				// deliveries ran out, later ones unheard, and no worker
				// answered). Nothing will deliver it again.
				if r, ok := c.kept(ctx, call.ID, stale, keptBy{reply: reply, anyOld: true}, true); ok {
					return r
				}
				return st.lost(fmt.Sprintf(
					"WorkerLostError: '%s' ended (last heard of on delivery %d) but its final was lost on the way and is not kept; it may or may not have taken effect.",
					call.Name, st.attempt))
			}
			if st.attempt == 0 && c.settled(ctx, call.Name, queued, stored) {
				// Never heard of, and the queue is done with it: removed
				// from the stream (its message deleted, the stream
				// purged) before a worker took it, or taken with every
				// frame lost and its final not kept. Nothing will
				// deliver it.
				if r, ok := c.kept(ctx, call.ID, stale, keptBy{reply: reply, anyOld: true}, true); ok {
					return r
				}
				return st.lost(fmt.Sprintf(
					"WorkerLostError: '%s' is no longer in the calls stream and no worker was heard of with it: it was removed from the stream (its message deleted, or the stream purged) before a worker took it, or a worker took it and all its frames, its final too, were lost on the way and it is not kept; it may or may not have taken effect.",
					call.Name))
			}
			if st.attempt == 0 {
				// Untaken for as long: perhaps no live worker can take it.
				if r := c.untaken(ctx, call); r != nil {
					// Recorded: a durable worker back later does not run it.
					r.Content[len(r.Content)-1].Text += c.cancelEnding(call.ID, "", true, reply)
					return r
				}
			}
			if st.attempt == 0 || st.attempt < st.max {
				// Look again later, less and less often: a call can wait
				// in the queue a long time.
				box.mu.Lock()
				box.stalled, box.last = false, time.Now()
				box.stallAfter = min(2*box.stallAfter, max(c.opts.StallTimeout, durableLookEvery))
				box.mu.Unlock()
				continue
			}
			fallthrough
		case stalled && grace == nil: // after a cancel, the grace period decides
			if call.KeepResult && !*durable {
				// The final may have been lost on its way (the client's
				// link down meanwhile, or cut as a slow consumer): the
				// worker kept it before sending it, under the id its
				// caller gave, with this call's reply subject, which no
				// earlier call under that id had.
				if r, ok := c.kept(ctx, first, 0, keptBy{reply: reply}, false); ok {
					r.ID = call.ID
					return r
				}
			}
			note := c.cancelEnding(call.ID, "", *durable, reply)
			if pinned != "" {
				// A silent worker keeps its subscriptions (frozen, cut off):
				// the session's next calls, and a retry of this one, go
				// through the queue group, whose worker takes the session
				// over from it.
				c.forgetPin(call, pinned)
			}
			if st.attempt > 0 {
				return st.lost(fmt.Sprintf(
					"WorkerLostError: the worker running '%s' went silent (delivery %d) and the durable queue did not deliver the call again; the call was cancelled. It may or may not have taken effect.",
					call.Name, st.attempt) + note)
			}
			return st.lost(fmt.Sprintf(
				"WorkerLostError: the worker running '%s' went silent for %s and is presumed lost; the call was cancelled. It may or may not have taken effect.",
				call.Name, c.opts.StallTimeout) + note)
		}
	}
}

// decodeFrame decodes and checks one reply frame; its strings share the
// message's payload, which nobody changes afterwards. A chunk frame's
// strings are copies when the payload is much larger than the content
// its chunks count: the call keeps its chunks' text, and a byte of text
// kept would keep the whole message (a large status in metadata that the
// next chunk replaces, or bytes the decoder skipped).
func decodeFrame(f *wire.Frame, m *nats.Msg) error {
	c := wire.CodecOf(m.Header)
	if err := c.UnmarshalShared(m.Data, f); err != nil {
		return fmt.Errorf("undecodable frame: %w", err)
	}
	if err := f.Check(); err != nil {
		return err
	}
	if f.Kind == wire.KindChunk && c == wire.Msgpack && len(m.Data) > 2*chunksSize(f)+pinSlack {
		*f = wire.Frame{}
		return c.Unmarshal(m.Data, f)
	}
	return nil
}

// pinSlack is the payload a chunk frame may hold beyond twice its
// chunks' size and still share its strings: a frame's own fields, with
// the longest call id, and a chunk's keys.
const pinSlack = 256

// chunksSize is the toolkit.Chunk.Size of a chunk frame's chunks.
func chunksSize(f *wire.Frame) int {
	n := f.Chunk.Size()
	for i := range f.More {
		n += f.More[i].Size()
	}
	return n
}

// notFound is the final of a call to a tool nobody serves.
func notFound(call toolkit.ToolCall) *toolkit.Response {
	e := toolkit.NotFound(call.Name)
	return toolkit.Final(call.ID, e.Code, e.Message)
}

// callState is what the client has received of one call.
type callState struct {
	id      string
	last    uint64
	chunks  uint64
	acc     toolkit.Accumulator
	bound   int           // the bound of the accumulated output; ≤ 0, none
	over    bool          // a chunk past bound came: the call ends
	attempt uint64        // the durable delivery the frames are of; 0 on the core path
	max     uint64        // the durable deliveries at most
	asking  *atomic.Int32 // the call's requests being answered (ask.go); nil before the first
	// asks is the context of the call's Asker handlers, ended by stopAsks
	// when the call ends; nil before the first request.
	asks     context.Context
	stopAsks context.CancelFunc
}

// endAsks ends the context of the call's requests still being answered.
func (st *callState) endAsks() {
	if st.stopAsks != nil {
		st.stopAsks()
	}
}

// next starts on the frames of a new delivery of a durable call: its
// frames count from 1 again and its output replaces the earlier
// delivery's (whose chunks the consumer has seen).
func (st *callState) next(f *wire.Frame) {
	st.attempt, st.max, st.last, st.chunks = f.Attempt, f.MaxAttempts, 0, 0
	st.acc = toolkit.Accumulator{}
}

// chunk accumulates a chunk and hands it to the caller; false when the
// caller stopped, or when the chunk would take the output past its bound
// (over).
func (st *callState) chunk(c *toolkit.Chunk, yield func(toolkit.Event) bool) bool {
	if st.bound > 0 && st.acc.HeldWith(c) > st.bound {
		st.over = true
		return false
	}
	st.chunks++
	st.acc.Add(c)
	return yield(toolkit.Event{Chunk: c})
}

// final turns a final frame into the response: the frame's content when
// nothing was streamed, the accumulated chunks otherwise.
func (st *callState) final(c *Client, f *wire.Frame) *toolkit.Response {
	r := f.Final
	r.ID = st.id
	if f.Chunks == 0 {
		return r // the final's content is the whole result
	}
	built := st.acc.Response(st.id)
	built.State, built.Code = r.State, r.Code
	// The chunks' metadata merged with the final's: a final may leave out
	// what the chunks carried. But not the worker's own keys, which a
	// worker of this build puts on the final alone (it drops them from
	// what the tool writes): in a chunk they are a tool's, passed on by a
	// worker of an earlier build.
	if built.Metadata == nil {
		built.Metadata = r.Metadata
	} else {
		dropWorkerKeys(built.Metadata)
		maps.Copy(built.Metadata, r.Metadata)
	}
	if f.Chunks > st.chunks {
		lost := f.Chunks - st.chunks
		c.log.Warn("bus: chunks lost; the result is incomplete", "call", st.id, "lost", lost)
		if built.Metadata == nil {
			built.Metadata = map[string]any{}
		}
		built.Metadata[wire.MetaLostChunks] = lost
	}
	return built
}

// partial ends the call on the client side, keeping the output so far.
func (st *callState) partial(code toolkit.Code, msg string) *toolkit.Response {
	c := toolkit.Chunk{Content: []toolkit.Block{{Type: toolkit.BlockText, Text: msg}}, State: code.State()}
	st.acc.Add(&c)
	r := st.acc.Response(st.id)
	r.Code = code
	dropWorkerKeys(r.Metadata) // a chunk's are a tool's (final)
	return r
}

// lost ends the call worker_lost on the client side: the output so far
// and msg, as partial, but none of the chunks' metadata. A worker's own
// worker_lost carries its instance (wire.MetaWorker) and nothing of the
// tool's; the client knows no more of the call than that it went silent
// (which worker, it is not told), and the chunks' keys would say what
// nobody said of this final: the tool's status of a run cut short, a
// session's worker (notePin would pin the session to the lost worker) or
// a run the worker reported (wire.MetaToolRan: an earlier build passing
// on a tool's key).
func (st *callState) lost(msg string) *toolkit.Response {
	r := st.partial(toolkit.CodeWorkerLost, msg)
	r.Metadata = nil
	return r
}

// deadlinePassed reports whether ctx ended by its deadline, also one
// given a cause of its own (context.WithTimeoutCause): the cancel then
// says so, and the worker ends the call timeout, as toolkit.ContextError
// does.
func deadlinePassed(ctx context.Context) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}

// ctxFinal is the final of a call whose ctx ended and whose worker did not
// answer the cancel in time.
func (c *Client) ctxFinal(ctx context.Context, id string, st *callState) *toolkit.Response {
	if st == nil {
		st = &callState{id: id}
	}
	e := toolkit.ContextError(ctx)
	return st.partial(e.Code, e.Message)
}

func setHeader(h nats.Header, k, v string) nats.Header {
	if h == nil {
		h = nats.Header{}
	}
	h[k] = []string{v}
	return h
}

func isNoResponders(m *nats.Msg) bool {
	return len(m.Data) == 0 && m.Header != nil && m.Header.Get("Status") == "503"
}

// noResponders tells a tool nobody has (not_found) from a fleet that is
// down (unavailable), asking wire.SubjectList.
func (c *Client) noResponders(ctx context.Context, call toolkit.ToolCall) *toolkit.Response {
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	reply, err := c.List(lctx, "")
	if err == nil && !slices.Contains(reply.Tools, call.Name) {
		return notFound(call)
	}
	return toolkit.Final(call.ID, toolkit.CodeUnavailable, fmt.Sprintf("ToolUnavailableError: no worker serves the tool '%s' right now; retry later.", call.Name))
}

// groupStateError begins the text of a worker's final for a call whose
// session's group state it could not read (toolkit's dispatch).
const groupStateError = "GroupStateError:"

// revision is a session's groups revision as the client remembers it.
type revision struct {
	rev uint64
	at  uint64 // Client.revClock when it was noted
}

// sessionRevision returns the revision remembered for session (0 for
// none) and the count of revisions noted so far, which tells the
// revisions noted before from those noted after.
func (c *Client) sessionRevision(session string) (rev, clock uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, _ := c.revs.peek(session)
	return r.rev, c.revClock
}

// noteRevision remembers the groups revision a reset_tools call returned;
// since is Client.revClock when the call was made.
//
// Revisions are the groups bucket's sequence numbers, so a write made
// after another has the higher revision, unless the bucket was deleted
// and made again in between, when they count from 1 again. A revision
// noted before the call was made is of an earlier write: when it is
// higher than the call's, the bucket was made again, and every revision
// noted before the call above the call's is of the old bucket and
// forgotten. Only against a revision noted while the call ran does the
// higher one win (concurrent reset_tools of one session).
func (c *Client) noteRevision(call toolkit.ToolCall, r *toolkit.Response, since uint64) {
	if call.Name != toolkit.MetaToolName || r.State != toolkit.StateSuccess {
		return
	}
	rev, ok := asUint64(r.Metadata[toolkit.MetaGroupsRevision])
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.revs.peek(call.Session)
	if ok && old.at > since {
		rev = max(rev, old.rev)
	}
	if (ok && old.at <= since && old.rev > rev) || (c.revHighAt <= since && c.revHigh > rev) {
		c.forgetRevisionsLocked(rev, since)
	}
	c.revClock++
	c.revs.put(call.Session, revision{rev: rev, at: c.revClock})
	if rev >= c.revHigh {
		c.revHigh, c.revHighAt = rev, c.revClock
	}
}

// forgetRevisionsLocked forgets the revisions above last noted at or
// before clock (Client.revClock): the groups bucket was made again and
// has not reached them. c.mu is held.
func (c *Client) forgetRevisionsLocked(last, clock uint64) {
	c.revHigh, c.revHighAt = 0, 0
	c.revs.deleteFunc(func(r revision) bool {
		if r.at <= clock && r.rev > last {
			return true
		}
		if r.rev > c.revHigh {
			c.revHigh, c.revHighAt = r.rev, r.at
		}
		return false
	})
}

// staleRevision is called when a request that carried the session's
// remembered revision sent (0: none) failed in a way a worker waiting for
// it fails. It asks the groups bucket for its last revision (a consumer
// of the client's own keys: kv.LastRevision) and forgets every
// remembered revision noted before the question that is above it (all of
// them when the bucket does not exist): a write acknowledged before the
// question would be at most the last revision, so those are of a bucket
// since deleted (in a cluster, where the answer may come from a replica
// a moment behind, a revision just acknowledged may be forgotten too: the
// session's next calls then do not wait for that write). It reports whether
// the session's revision is now lower than sent, so that a request
// without side effects can be made again.
func (c *Client) staleRevision(ctx context.Context, session string, sent uint64) bool {
	if sent == 0 {
		return false
	}
	cur, clock := c.sessionRevision(session)
	if cur < sent {
		return true // forgotten meanwhile
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	// 0: no bucket, the next one counts from 1. Asked of a consumer of
	// the client's own keys: a caller's role may not ask the stream.
	last, err := kv.LastRevision(ctx, js, c.opts.GroupsBucket, c.ownKeys())
	if err != nil {
		c.log.Warn("bus: asking the groups bucket for its last revision", "err", err)
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.revHigh > last {
		c.forgetRevisionsLocked(last, clock)
	}
	r, _ := c.revs.peek(session)
	return r.rev < sent
}

// ownKeys is the filter of the client's keys in the fleet's buckets:
// its identity's, or all of them for an anonymous client.
func (c *Client) ownKeys() string {
	if c.opts.Identity == "" {
		return ">"
	}
	return c.opts.Identity + ".>"
}

// notePin remembers where a session-bound tool's call ran for its session.
func (c *Client) notePin(call toolkit.ToolCall, r *toolkit.Response) {
	inst, ok := r.Metadata[wire.MetaSessionWorker].(string)
	if !ok || !wire.ValidIdentity(inst) {
		return
	}
	scope := toolkit.SessionScope(c.opts.Identity, call.Session)
	c.mu.Lock()
	c.pins.put(scope, inst)
	if !c.bound[call.Name] && len(c.bound) >= maxBoundTools {
		clear(c.bound)
	}
	c.bound[call.Name] = true
	c.mu.Unlock()
}

// forgetPin drops the session's pin if it still names inst.
func (c *Client) forgetPin(call toolkit.ToolCall, inst string) {
	scope := toolkit.SessionScope(c.opts.Identity, call.Session)
	c.mu.Lock()
	if cur, _ := c.pins.peek(scope); cur == inst {
		c.pins.delete(scope)
	}
	c.mu.Unlock()
}

// Pin returns the worker instance the session's calls of session-bound
// tools are pinned to, as far as this client has seen ("" when unknown).
func (c *Client) Pin(session string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	inst, _ := c.pins.get(toolkit.SessionScope(c.opts.Identity, session))
	return inst
}

// lru maps sessions to what a client remembers of them, keeping at most
// max entries: putting one more forgets the least recently used. It is
// not safe for concurrent use (the Client's mu guards it).
type lru[V any] struct {
	max   int
	order *list.List // of *lruEntry[V], the most recently used first
	index map[string]*list.Element
}

type lruEntry[V any] struct {
	key string
	val V
}

func newLRU[V any](max int) *lru[V] {
	return &lru[V]{max: max, order: list.New(), index: map[string]*list.Element{}}
}

// get returns key's value and marks it used.
func (l *lru[V]) get(key string) (V, bool) {
	e, ok := l.index[key]
	if !ok {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).val, true
}

// peek returns key's value without marking it used.
func (l *lru[V]) peek(key string) (V, bool) {
	e, ok := l.index[key]
	if !ok {
		var zero V
		return zero, false
	}
	return e.Value.(*lruEntry[V]).val, true
}

// put sets key's value, marks it used and forgets the least recently
// used entry when there are more than max.
func (l *lru[V]) put(key string, val V) {
	if e, ok := l.index[key]; ok {
		e.Value.(*lruEntry[V]).val = val
		l.order.MoveToFront(e)
		return
	}
	l.index[key] = l.order.PushFront(&lruEntry[V]{key: key, val: val})
	if l.order.Len() > l.max {
		l.delete(l.order.Back().Value.(*lruEntry[V]).key)
	}
}

func (l *lru[V]) delete(key string) {
	if e, ok := l.index[key]; ok {
		l.order.Remove(e)
		delete(l.index, key)
	}
}

func (l *lru[V]) len() int { return len(l.index) }

// deleteFunc forgets the entries for which del returns true.
func (l *lru[V]) deleteFunc(del func(V) bool) {
	for e := l.order.Front(); e != nil; {
		next := e.Next()
		if en := e.Value.(*lruEntry[V]); del(en.val) {
			l.order.Remove(e)
			delete(l.index, en.key)
		}
		e = next
	}
}

// asUint64 reads a number decoded from msgpack (loose decoding: int64 or
// uint64) or JSON (float64).
func asUint64(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint64:
		return x, true
	case int64:
		return uint64(x), x >= 0
	case float64:
		return uint64(x), x >= 0 && x == math.Trunc(x)
	}
	return 0, false
}

func headerSize(h nats.Header) int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// List asks one worker (wire.SubjectList) for its tools and the schemas the
// session may see now, honouring the session's latest groups revision.
//
// A list request whose session's revision the groups bucket cannot reach
// (made again since: see Revision) fails; the client then forgets that
// revision and asks once more without it.
func (c *Client) List(ctx context.Context, session string) (*wire.ListReply, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	rev := c.Revision(session)
	reply, err := c.list(ctx, session, rev)
	if err != nil && c.staleRevision(ctx, session, rev) {
		reply, err = c.list(ctx, session, c.Revision(session))
	}
	return reply, err
}

// list makes one list request for session at revision rev.
func (c *Client) list(ctx context.Context, session string, rev uint64) (*wire.ListReply, error) {
	data, err := wire.Msgpack.Marshal(&wire.ListRequest{Session: session})
	if err != nil {
		return nil, err
	}
	msg := &nats.Msg{Subject: wire.ListSubject(c.opts.Identity), Header: nats.Header{wire.HeaderVersion: {wire.Version}}, Data: data}
	if rev > 0 {
		msg.Header.Set(wire.HeaderGroupsRevision, strconv.FormatUint(rev, 10))
	}
	m, err := c.nc.RequestMsgWithContext(ctx, msg)
	if err != nil {
		return nil, fmt.Errorf("bus: listing tools: %w", err)
	}
	var reply wire.ListReply
	if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &reply); err != nil {
		return nil, fmt.Errorf("bus: listing tools: undecodable reply: %w", err)
	}
	if reply.Error != "" {
		return nil, fmt.Errorf("bus: listing tools: worker %s: %s", reply.Worker, reply.Error)
	}
	return &reply, nil
}

// SessionSchemas lists the tool schemas the session may see now across
// the whole fleet, as *toolkit.Toolkit's SessionSchemas does for one
// toolkit: the skill viewer first, then reset_tools (when any worker has
// groups), then the basic group's and the active groups' tools, merged by
// name from every worker's announcement (the client's Fleet), and narrowed by
// ClientOptions.Filter. The session's active groups are read as
// ActiveGroups reads them. Workers that do not announce
// (WorkerOptions.AnnounceInterval < 0) are not listed; List asks one
// worker instead. It is the one way toolctl and the MCP gateway list what
// a session can call.
func (c *Client) SessionSchemas(ctx context.Context, session string, minRevision uint64) ([]toolkit.FunctionSchema, error) {
	scope := toolkit.SessionScope(c.opts.Identity, session)
	f, state, err := c.discovery(ctx)
	if err != nil {
		return nil, err
	}
	cat := f.Catalog()
	active, err := c.loadActive(ctx, state, cat.Groups, session, minRevision)
	if err != nil {
		return nil, fmt.Errorf("bus: reading the groups of session %s: %w", wire.Quote(session), err)
	}
	schemas := cat.Schemas(active)
	if c.opts.Filter != nil {
		if schemas, err = c.opts.Filter(ctx, f, scope, schemas); err != nil {
			return nil, fmt.Errorf("bus: listing the tools of session %s: %w", wire.Quote(session), err)
		}
	}
	return schemas, nil
}

// ActiveGroups returns the session's active groups across the fleet: read
// from the groups KV bucket (ClientOptions.GroupsBucket) at least at
// minRevision and the latest revision the client saw for the session;
// while the bucket does not exist no session has stored state, and a
// session without state has the groups the fleet announces active. A
// session name starting with a NUL is refused (toolkit.ErrInvalidSession),
// as workers refuse it in a call.
func (c *Client) ActiveGroups(ctx context.Context, session string, minRevision uint64) ([]string, error) {
	f, state, err := c.discovery(ctx)
	if err != nil {
		return nil, err
	}
	active, err := c.loadActive(ctx, state, f.Groups(), session, minRevision)
	if err != nil {
		return nil, fmt.Errorf("bus: reading the groups of session %s: %w", wire.Quote(session), err)
	}
	return active, nil
}

// loadActive reads the session's active groups at least at minRevision
// and the revision the client remembers for the session; when that
// revision turns out not to be reachable (see Revision), it is forgotten
// and the groups read once more. A session name starting with a NUL is
// refused, as workers refuse it in a call or a list: as an anonymous
// client's it would read an identity's session (toolkit.SessionScope).
func (c *Client) loadActive(ctx context.Context, state toolkit.GroupState, groups []toolkit.Group, session string, minRevision uint64) ([]string, error) {
	if strings.HasPrefix(session, "\x00") {
		return nil, fmt.Errorf("%w: a session name must not start with a NUL character", toolkit.ErrInvalidSession)
	}
	scope := toolkit.SessionScope(c.opts.Identity, session)
	rev := c.Revision(session)
	active, _, err := toolkit.LoadActive(ctx, state, groups, scope, max(minRevision, rev))
	if err != nil && rev > minRevision && errors.Is(err, ErrStaleGroupState) && c.staleRevision(ctx, session, rev) {
		active, _, err = toolkit.LoadActive(ctx, state, groups, scope, max(minRevision, c.Revision(session)))
	}
	return active, err
}

// ExportState returns a session's state (AgentScope 1.x state_dict:
// its active groups) that the fleet has, in the fleet's group order
// (Fleet.Groups), so that ImportState takes it back: a group whose
// workers are all gone since the session activated it is left out, as
// toolkit.ExportState leaves out a group removed.
func (c *Client) ExportState(ctx context.Context, session string) (toolkit.SessionState, error) {
	f, state, err := c.discovery(ctx)
	if err != nil {
		return toolkit.SessionState{}, err
	}
	groups := f.Groups()
	active, err := c.loadActive(ctx, state, groups, session, 0)
	if err != nil {
		return toolkit.SessionState{}, fmt.Errorf("bus: reading the groups of session %s: %w", wire.Quote(session), err)
	}
	return toolkit.SessionState{ActiveGroups: toolkit.InGroupOrder(groups, active)}, nil
}

// ImportState sets a session's state (1.x load_state_dict) through the
// fleet's reset_tools, so it is checked and stored as a model's call
// would be; a group the fleet does not have is refused. It returns the
// new groups revision. The error of a refused import holds a
// *toolkit.Error with the final's code (toolkit.CodeOf): not_found when
// the fleet has no groups to set.
func (c *Client) ImportState(ctx context.Context, session string, st toolkit.SessionState) (uint64, error) {
	if session == "" {
		return 0, errors.New("bus: importing a state needs a session")
	}
	in := map[string]any{}
	for _, g := range st.ActiveGroups {
		in[g] = true
	}
	r := c.Invoke(ctx, toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session, Input: in})
	if r.State != toolkit.StateSuccess {
		return 0, fmt.Errorf("bus: importing the state of session %s: %w (%s)", wire.Quote(session), toolkit.NewError(r.Code, r.Text()), r.Code)
	}
	rev, _ := asUint64(r.Metadata[toolkit.MetaGroupsRevision])
	return rev, nil
}

// Instructions returns the instructions of a session's active groups, for
// the system prompt (toolkit.ActivatedInstructions over the fleet's
// groups).
func (c *Client) Instructions(ctx context.Context, session string) (string, error) {
	f, state, err := c.discovery(ctx)
	if err != nil {
		return "", err
	}
	groups := f.Groups()
	active, err := c.loadActive(ctx, state, groups, session, 0)
	if err != nil {
		return "", fmt.Errorf("bus: reading the groups of session %s: %w", wire.Quote(session), err)
	}
	return toolkit.ActivatedInstructions(groups, active), nil
}

// Fleet returns the client's view of the fleet (ClientOptions.Fleet, or a
// discovery.Fleet started on first use and closed with the client).
func (c *Client) Fleet(ctx context.Context) (*discovery.Fleet, error) {
	c.fleetMu.Lock()
	defer c.fleetMu.Unlock()
	return c.fleetLocked(ctx)
}

// fleetLocked starts the fleet view once; it needs no JetStream (the
// core path does not). c.fleetMu is held.
func (c *Client) fleetLocked(ctx context.Context) (*discovery.Fleet, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, errors.New("bus: the client is closed")
	}
	if c.fleet == nil && c.opts.Fleet != nil {
		c.fleet = c.opts.Fleet
	}
	if c.fleet == nil {
		f, err := discovery.NewFleet(ctx, c.nc, &discovery.FleetOptions{Logger: c.log, DiscoverWindow: c.opts.DiscoverWindow})
		if err != nil {
			return nil, err
		}
		c.fleet = f
	}
	return c.fleet, nil
}

// discovery returns the client's Fleet (made on first use) and the group
// state to read sessions from.
func (c *Client) discovery(ctx context.Context) (*discovery.Fleet, toolkit.GroupState, error) {
	c.fleetMu.Lock()
	defer c.fleetMu.Unlock()
	if _, err := c.fleetLocked(ctx); err != nil {
		return nil, nil, err
	}
	if c.state == nil { // bound once the bucket exists
		js, err := jetstream.New(c.nc)
		if err != nil {
			return nil, nil, fmt.Errorf("bus: JetStream: %w", err)
		}
		probe, _ := wire.SessionKey(toolkit.SessionScope(c.opts.Identity, ""))
		if c.state, err = bindKVState(ctx, js, c.opts.GroupsBucket, probe); err != nil {
			return nil, nil, err
		}
	}
	if c.state == nil {
		return c.fleet, noState{}, nil
	}
	return c.fleet, c.state, nil
}

// noState is the group state of a fleet whose bucket does not exist yet:
// no session has stored any.
type noState struct{}

func (noState) Load(_ context.Context, session string, _ uint64) ([]string, uint64, bool, error) {
	// A session that cannot be a KV key is refused as KVState refuses it.
	_, err := wire.SessionKey(session)
	return nil, 0, false, err
}

func (noState) Store(context.Context, string, []string) (uint64, error) {
	return 0, errors.New("bus: no group state bucket")
}
