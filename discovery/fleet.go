package discovery

import (
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// Defaults of FleetOptions.
const (
	// DefaultTTLFactor: a Fleet drops an instance not heard from for this
	// many of the instance's announced intervals.
	DefaultTTLFactor = 3
	// DefaultDiscoverWindow is how long a Fleet collects answers to its
	// discover request.
	DefaultDiscoverWindow = 250 * time.Millisecond
)

// FleetOptions configure NewFleet. A nil *FleetOptions means the defaults;
// so does every zero field.
type FleetOptions struct {
	// TTL drops an instance not heard from for that long. 0 means
	// DefaultTTLFactor times the instance's announced interval.
	TTL time.Duration
	// DiscoverWindow is how long Discover (and NewFleet) collect answers;
	// 0 means DefaultDiscoverWindow.
	DiscoverWindow time.Duration
	// Logger receives malformed announcements; nil means slog.Default().
	// It is called on a goroutine of the Fleet's own, never from the
	// goroutines that keep the view (see the package doc, Logging).
	Logger *slog.Logger

	// holding and applying, when set, are called with each message as
	// hold and apply take it: tests hold the subscription or the intake
	// there.
	holding, applying func(*nats.Msg)
	// clock, when set, is the fleet's clock instead of time.Now: what it
	// stamps messages with as they arrive, and what their TTLs count
	// from. Tests move it on.
	clock func() time.Time
}

// Tool is a tool served by one or more instances.
type Tool struct {
	wire.AnnouncedTool
	// Instances serving the tool, sorted.
	Instances []string
}

// ToolInfo is a merged tool without its input schema (Parameters and
// Order): what Tool holds besides, for a caller that reads a tool's
// flags, group or instances (Fleet.ToolInfo).
type ToolInfo struct {
	Name        string
	Description string
	// Group is "basic" or one of the fleet's groups.
	Group           string
	ReadOnly        bool
	ConcurrencySafe bool
	// Idempotency is toolkit.Idempotency's String; IdempotencyLevel
	// parses it.
	Idempotency string
	// Conditional and ListedWith are wire.AnnouncedTool's: the tool is
	// listed only while one of ListedWith is basic or active.
	Conditional bool
	ListedWith  []string
	// Kind is what its builder declared it to be ("" for a function tool).
	Kind string
	// Instances serving the tool, sorted.
	Instances []string
}

// IdempotencyLevel parses Idempotency as wire.AnnouncedTool's does.
func (t ToolInfo) IdempotencyLevel() toolkit.Idempotency {
	return wire.AnnouncedTool{Idempotency: t.Idempotency}.IdempotencyLevel()
}

// Instance is a live worker instance as a Fleet knows it.
type Instance struct {
	ID      string
	Version string
	Queue   string
	Groups  []string // non-basic groups, in the instance's order
	Tools   []string // in the instance's order
	// Interval is the announce interval its TTL counts with: the one its
	// last announcement asked (DefaultInterval when none, MaxInterval at
	// most), never longer than the first announcement of its run the
	// fleet heard asked (an announcer's interval does not change within
	// a run).
	Interval time.Duration
	LastSeen time.Time
	// Expires is when the instance is dropped unless heard from again.
	Expires time.Time
	// Meta are the parts other packages announced (wire.Announcement.Meta);
	// read one with DecodeMeta. It is the fleet's own, shared with every
	// caller of Instances: read it, never change it.
	Meta map[string]any
}

// DecodeMeta decodes the part of the instance's announcement stored under
// key into v (as encoding/json would); ok is false when there is none.
func (in Instance) DecodeMeta(key string, v any) (ok bool, err error) {
	part, ok := in.Meta[key]
	if !ok {
		return false, nil
	}
	b, err := json.Marshal(part)
	if err != nil {
		return true, err
	}
	return true, json.Unmarshal(b, v)
}

// Fleet is a client's live view of the tools the fleet serves, built from
// announcements: a new instance appears when its first announcement
// arrives, a stopped one disappears on its goodbye, and one that died
// without a goodbye disappears TTL after its last announcement (by default
// 3 announce intervals, 6 s with the default interval).
// Before it drops one, it reads what its connection has received by then
// (a round trip to the server), so a client frozen for a while keeps the
// instances whose announcements waited in the connection.
//
// Tools served by several instances are merged by name. Where instances
// disagree about a tool or group, the instance whose id sorts first wins.
//
// All methods are safe for concurrent use. Close stops the Fleet's
// goroutine and waits for it.
type Fleet struct {
	nc     *nats.Conn
	opts   FleetOptions
	log    *slog.Logger // queues for opts.Logger (logq)
	logq   *logQueue
	sub    *nats.Subscription
	view   atomic.Pointer[view]
	notify chan struct{}
	done   chan struct{}
	ended  chan struct{} // closed when the notifier has returned
	taken  chan struct{} // closed when the intake has returned

	// The broadcast announcements waiting for the intake: the last few per
	// subject (heldPerSubject), so a neighbour flooding its own subject
	// crowds out nobody (and the subscription, doing no work, never falls
	// behind).
	inMu    sync.Mutex
	latest  map[string][]heldMsg
	held    int // bytes in latest
	arrived chan struct{}
	// waiting is, per subject, when the newest message held or being
	// applied by the intake arrived: an instance whose TTL runs out while
	// a message of it waits is not expired until the intake has read it
	// (see expire).
	waiting map[string]time.Time
	read    chan struct{} // closed, and replaced, when the intake has read a batch
	// Messages refused by hold as no announcement, since refusedAt (when
	// the last were logged).
	refused   int
	refusedAt time.Time
	// handled counts the messages the subscription has handed to hold
	// (every one, refused or kept), so that catchUp can tell when what the
	// connection had received is read.
	handled atomic.Uint64

	mu        sync.Mutex // taken before inMu, never inside it
	instances map[string]*instance
	bytes     int // the instances' announcements decoded: sum of their sizes
	// retired are, per instance id, its runs that ended (said goodbye, or
	// another run followed): their messages arriving later are stale.
	// nRetired counts them; retiredBy holds a mark of each (and of the
	// runs replaced since), soonest forgotten first, so pruneRetired
	// looks only at the runs it forgets; retiredIn holds one too, in the
	// order they ended, so that past maxRetired the oldest goes first.
	retired   map[string][]retiredRun
	nRetired  int
	retiredBy retiredMarks
	retiredIn []retiredMark
	// unseen holds a mark of each goodbye of an instance not listed that
	// retired holds (and of some forgotten since), oldest first; nUnseen
	// counts those retired holds.
	unseen   []retiredMark
	nUnseen  int
	watchers map[int]func()
	nextW    int
	closed   bool
	// suspects are the instances whose TTL ran out, kept until the
	// connection's received messages are read (catchUp): each with the
	// announcement its timer was set for. At most one per instance.
	suspects map[string]announced
	catching bool // catchUp runs
	// Discover's rounds: one runs at a time (discoverRounds), and the calls
	// made meanwhile share the next, so the answers of one discovery at a
	// time are held, however many callers ask at once.
	nextRound   *round
	discovering bool           // discoverRounds runs
	helpers     sync.WaitGroup // catchUp and discoverRounds
}

// round is one discovery and the Discover calls waiting for it.
type round struct {
	done chan struct{} // closed when it has ended, with err
	err  error
}

// errClosed ends the Discover calls of a closed fleet.
var errClosed = errors.New("discovery: fleet: discover: the fleet is closed")

// run names one run of an instance's announcer, from the start of a
// process announcing under the instance id to its goodbye: its
// incarnation and epoch (wire.Announcement.Incarnation; older announcers
// send no incarnation, and their epoch alone names the run).
type run struct {
	incarnation string
	epoch       int64
}

func runOf(ann *wire.Announcement) run { return run{incarnation: ann.Incarnation, epoch: ann.EpochMS} }

// announced names one announcement of an instance.
type announced struct {
	run run
	seq uint64
}

type instance struct {
	ann      wire.Announcement
	lastSeen time.Time // when the announcement arrived
	ttl      time.Duration
	timer    *time.Timer
	size     int  // bytes of the announcement decoded (decodedSize)
	overdue  bool // its TTL ran out while a message of it waited for the intake
	// interval is the announce interval ttl counts with: the one ann
	// asked (Fleet.interval), never longer than runInterval, the one the
	// first message of its run the fleet heard asked.
	interval, runInterval time.Duration
}

// heldMsg is a broadcast announcement waiting for the intake, and when
// it arrived.
type heldMsg struct {
	m  *nats.Msg
	at time.Time
}

// retiredRun remembers a run of an instance that ended, by its goodbye
// or because a message of another run arrived after its last, so that
// its messages arriving late (a discover answer read at the end of the
// window, one delayed on its way through a cluster) do not bring it back
// until until; after its goodbye, those that arrived by reorderHorizon
// after it (isRetired).
type retiredRun struct {
	run   run
	until time.Time
	// bye is when the run's goodbye arrived; zero when another run
	// ended it.
	bye time.Time
	// unseen: the goodbye of an instance the fleet did not list
	// (retireUnseen).
	unseen bool
}

// retiredMark is a retiredRun of instance id, as retiredMarks orders it.
type retiredMark struct {
	id string
	retiredRun
}

// retiredMarks is a min-heap (container/heap) of marks by until.
type retiredMarks []retiredMark

func (h retiredMarks) Len() int           { return len(h) }
func (h retiredMarks) Less(i, j int) bool { return h[i].until.Before(h[j].until) }
func (h retiredMarks) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *retiredMarks) Push(x any)        { *h = append(*h, x.(retiredMark)) }
func (h *retiredMarks) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// view is an immutable merged snapshot.
type view struct {
	tools     []Tool
	toolAt    map[string]int // index of a name in tools
	catalog   toolkit.Catalog
	instances []Instance
}

// NewFleet subscribes to announcements and runs Discover once, so the
// returned Fleet already knows every instance that answered within the
// discover window.
func NewFleet(ctx context.Context, nc *nats.Conn, opts *FleetOptions) (*Fleet, error) {
	var o FleetOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case nc == nil:
		return nil, errors.New("discovery: NewFleet: nil connection")
	case o.TTL < 0:
		return nil, fmt.Errorf("discovery: NewFleet: negative TTL %v", o.TTL)
	case o.DiscoverWindow < 0:
		return nil, fmt.Errorf("discovery: NewFleet: negative discover window %v", o.DiscoverWindow)
	}
	if o.DiscoverWindow == 0 {
		o.DiscoverWindow = DefaultDiscoverWindow
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	f := &Fleet{
		nc:        nc,
		opts:      o,
		notify:    make(chan struct{}, 1),
		done:      make(chan struct{}),
		ended:     make(chan struct{}),
		taken:     make(chan struct{}),
		latest:    map[string][]heldMsg{},
		arrived:   make(chan struct{}, 1),
		waiting:   map[string]time.Time{},
		read:      make(chan struct{}),
		instances: map[string]*instance{},
		retired:   map[string][]retiredRun{},
		watchers:  map[int]func(){},
		suspects:  map[string]announced{},
	}
	f.view.Store(&view{})
	f.logq, f.log = newLogQueue("fleet", o.Logger.Handler())
	sub, err := nc.Subscribe(wire.SubjectAnnouncePrefix+"*", f.hold)
	if err != nil {
		f.logq.close()
		return nil, fmt.Errorf("discovery: fleet: subscribing to %s*: %w", wire.SubjectAnnouncePrefix, err)
	}
	f.sub = sub
	go f.notifier()
	go f.intake()
	if err := f.Discover(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Discover asks every live instance to announce itself and waits for the
// discover window (less when no instance is listening at all), then for
// the announcements received by then to be read. Use it to refresh at
// once, for example after a reconnect.
//
// One discovery runs at a time: a call made while one is under way waits
// for it and then shares the next with every other call made meanwhile
// (its request is sent after each of theirs), so it can take up to two
// windows. It does not end with the running one on purpose: that one's
// request went out before the call, maybe before the change that made
// the caller ask (a reconnect, a worker it was told about), and its
// answers may not show it. Calls made together share one discovery, so
// a fleet holds the answers of one at a time. Its ctx ends the wait,
// not the discovery, which others may share.
func (f *Fleet) Discover(ctx context.Context) error {
	if ctx.Err() != nil {
		return fmt.Errorf("discovery: fleet: discover: %w", context.Cause(ctx))
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return errClosed
	}
	r := f.nextRound
	if r == nil {
		r = &round{done: make(chan struct{})}
		f.nextRound = r
		if !f.discovering {
			f.discovering = true
			f.helpers.Add(1)
			go f.discoverRounds()
		}
	}
	f.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("discovery: fleet: discover: %w", context.Cause(ctx))
	}
}

// discoverRounds runs the rounds Discover calls ask for, one at a time,
// until none is asked for; a round ends early when the fleet closes.
func (f *Fleet) discoverRounds() {
	defer f.helpers.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-f.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		f.mu.Lock()
		r, closed := f.nextRound, f.closed
		f.nextRound = nil
		if r == nil {
			f.discovering = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if closed {
			r.err = errClosed
		} else if r.err = f.discover(ctx); r.err != nil && ctx.Err() != nil {
			r.err = errClosed
		}
		close(r.done)
	}
}

// discover is one round of Discover: ctx ends when the fleet closes.
func (f *Fleet) discover(ctx context.Context) error {
	inbox := f.nc.NewInbox()
	none := make(chan struct{})
	var once sync.Once
	// The answers are kept as they come and read once the window is over:
	// read on the subscription, one slow to decode held up the others,
	// and those still queued when the window ended were dropped with it.
	var mu sync.Mutex
	var answers []heldMsg
	size, over := 0, 0
	sub, err := f.nc.Subscribe(inbox, func(m *nats.Msg) {
		if len(m.Data) == 0 && m.Header.Get(wire.HeaderStatus) == wire.StatusNoResponders {
			once.Do(func() { close(none) }) // nobody to wait for
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if len(answers) >= maxInstances || size+len(m.Data) > maxInstanceBytes {
			over++ // more than the fleet keeps
			return
		}
		answers = append(answers, heldMsg{m: m, at: f.now()})
		size += len(m.Data)
	})
	if err != nil {
		return fmt.Errorf("discovery: fleet: discover: %w", err)
	}
	defer sub.Unsubscribe()
	if err := f.nc.PublishRequest(wire.SubjectDiscover, inbox, nil); err != nil {
		return fmt.Errorf("discovery: fleet: discover: %w", err)
	}
	t := time.NewTimer(f.opts.DiscoverWindow)
	defer t.Stop()
	select {
	case <-t.C:
	case <-none:
	case <-ctx.Done():
		return fmt.Errorf("discovery: fleet: discover: %w", context.Cause(ctx))
	}
	end := f.now()
	sub.Unsubscribe()
	mu.Lock()
	got, dropped := answers, over
	answers, over = nil, 0
	mu.Unlock()
	if dropped > 0 {
		f.log.Warn("discovery: fleet: discover: answers past the fleet's bounds ignored", "ignored", dropped,
			"max_instances", maxInstances, "max_bytes", maxInstanceBytes)
	}
	merge := false
	for _, h := range got {
		merge = f.apply(h.m, h.at) || merge
	}
	if merge {
		f.remerge()
	}
	return f.readArrived(ctx, end)
}

// readArrived waits until the intake has read the broadcast announcements
// that arrived by until: a worker answers the discover requests over its
// bound by a broadcast, and a large announcement takes a while to decode,
// so the view is complete only once they are read. A subject that has
// received a later message since is not waited for (a neighbour flooding
// its subject holds nobody up); the intake reads everything held in one
// or two batches.
func (f *Fleet) readArrived(ctx context.Context, until time.Time) error {
	logged := false
	for {
		f.inMu.Lock()
		pending := 0
		for _, at := range f.waiting {
			if !at.After(until) {
				pending++
			}
		}
		read := f.read
		f.inMu.Unlock()
		if pending == 0 {
			return nil
		}
		if !logged {
			logged = true
			f.log.Debug("discovery: fleet: discover: waiting for the announcements received to be read", "subjects", pending)
		}
		select {
		case <-read:
		case <-f.done:
			return nil
		case <-ctx.Done():
			return fmt.Errorf("discovery: fleet: discover: waiting for the announcements received to be read: %w", context.Cause(ctx))
		}
	}
}

// Close stops listening and waits for the Fleet's goroutines, among them
// an OnChange function or a Logger call in progress. The view keeps its
// last state.
func (f *Fleet) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	for _, in := range f.instances {
		in.timer.Stop()
	}
	f.mu.Unlock()
	close(f.done)
	<-f.ended
	<-f.taken
	f.helpers.Wait()
	err := ignoreClosed(f.sub.Unsubscribe())
	f.logq.close()
	return err
}

// Tools returns the merged tools: instances in id order, each one's tools
// in its registration order, the first occurrence of a name kept. They
// are the caller's own (copied, schemas and all, on each call): changing
// them changes nothing of the fleet's nor of another caller's.
func (f *Fleet) Tools() []Tool {
	v := f.view.Load()
	out := make([]Tool, len(v.tools))
	for i, t := range v.tools {
		out[i] = cloneTool(t)
	}
	return out
}

// Tool returns one merged tool, the caller's own as Tools' are. For its
// flags alone, ToolInfo copies far less.
func (f *Fleet) Tool(name string) (Tool, bool) {
	v := f.view.Load()
	if i, ok := v.toolAt[name]; ok {
		return cloneTool(v.tools[i]), true
	}
	return Tool{}, false
}

// ToolInfo returns one merged tool as Tool does, without its schema:
// the caller's own too, but it copies only the lists of instances and
// groups where Tool copies the whole schema, so a caller that reads
// flags once per tool of a listing pays little for it.
func (f *Fleet) ToolInfo(name string) (ToolInfo, bool) {
	v := f.view.Load()
	if i, ok := v.toolAt[name]; ok {
		t := v.tools[i]
		return ToolInfo{Name: t.Name, Description: t.Description, Group: t.Group,
			ReadOnly: t.ReadOnly, ConcurrencySafe: t.ConcurrencySafe, Idempotency: t.Idempotency,
			Conditional: t.Conditional, ListedWith: slices.Clone(t.ListedWith), Kind: t.Kind,
			Instances: slices.Clone(t.Instances)}, true
	}
	return ToolInfo{}, false
}

// Groups returns the merged non-basic groups, in the same order rule as
// Tools.
func (f *Fleet) Groups() []toolkit.Group { return slices.Clone(f.view.Load().catalog.Groups) }

// Instances returns the live instances, sorted by id.
func (f *Fleet) Instances() []Instance {
	v := f.view.Load()
	out := make([]Instance, len(v.instances))
	for i, in := range v.instances {
		in.Groups = slices.Clone(in.Groups)
		in.Tools = slices.Clone(in.Tools)
		out[i] = in
	}
	return out
}

// Catalog returns the merged groups and tools as a toolkit.Catalog: its
// Schemas lists the fleet for a set of active groups exactly as one
// toolkit lists itself. Its lists of groups and tools are the caller's
// own; what a tool of it holds (its schema, key order and the groups it
// is listed with) is the fleet's, shared with every caller: read it,
// never change it (Schemas returns copies of the schemas).
func (f *Fleet) Catalog() toolkit.Catalog {
	c := f.view.Load().catalog
	return toolkit.Catalog{Groups: slices.Clone(c.Groups), Tools: slices.Clone(c.Tools)}
}

// SessionSchemas returns the fleet's schemas for a session's active
// groups, read from state (at least minRevision); a session without stored
// state gets the groups announced as active by default.
func (f *Fleet) SessionSchemas(ctx context.Context, state toolkit.GroupState, session string, minRevision uint64) ([]toolkit.FunctionSchema, error) {
	c := f.view.Load().catalog
	active, _, err := toolkit.LoadActive(ctx, state, c.Groups, session, minRevision)
	if err != nil {
		return nil, err
	}
	return c.Schemas(active), nil
}

// OnChange registers fn to run whenever the merged view changes (an
// instance appears or disappears, or announces different tools). Calls
// are made one at a time from the Fleet's goroutine and coalesced: fn sees
// the latest view, not every step. An fn that does not return delays
// only the later calls (the view goes on changing); Close waits for it.
// It returns a function that unregisters fn.
func (f *Fleet) OnChange(fn func()) (stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.nextW
	f.nextW++
	f.watchers[id] = fn
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.watchers, id)
	}
}

func (f *Fleet) notifier() {
	defer close(f.ended)
	for {
		select {
		case <-f.done:
			return
		case <-f.notify:
		}
		f.mu.Lock()
		fns := slices.Collect(maps.Values(f.watchers))
		f.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
	}
}

// Bounds on what announcements may ask of a fleet: an interval (so a
// TTL) longer than MaxInterval counts as MaxInterval, an incarnation
// takes at most maxIncarnation bytes, at most maxGoodbyes goodbyes of
// instances not listed are remembered, the oldest forgotten first past
// that (each instance at most
// retiredPerInstance ended runs, and the fleet maxRetired in all: those
// of instances that came and went under ever new ids), and at most
// maxInstances instances are kept, whose announcements hold at most
// maxInstanceBytes decoded (as decodedSize estimates them: counted as
// received, an announcement of many small tools takes ten times more):
// past either, an announcement of an
// instance not kept yet, or one that would grow the total past
// maxInstanceBytes, is ignored (logged). Any worker may announce any
// instance id, and each is kept for up to three MaxIntervals: without
// the bound, one neighbour inventing ids kept the fleet growing.
const (
	MaxInterval        = time.Hour
	maxIncarnation     = 64
	maxGoodbyes        = 1024
	retiredPerInstance = 4
	maxRetired         = retiredPerInstance * maxInstances
	maxInstances       = 4096
	maxInstanceBytes   = 128 << 20
)

// maxHeld bounds the subjects whose announcements wait for the intake,
// maxHeldBytes their bytes (as nats.go's pending limit did before), and
// heldPerSubject the announcements of one subject (the oldest go first).
const (
	maxHeld        = 4096
	maxHeldBytes   = 64 << 20
	heldPerSubject = 2 // a message and the one before it: a reordered pair is still told apart
)

// refusedLogEvery bounds the log lines about messages refused as no
// announcement: one per interval, with their count.
const refusedLogEvery = time.Minute

// hold keeps m for the intake; past the bounds it is dropped (the
// instance announces again within its interval). A message that cannot be
// an announcement (mayAnnounce) is refused first: it takes no place.
func (f *Fleet) hold(m *nats.Msg) {
	defer f.handled.Add(1)
	if f.opts.holding != nil {
		f.opts.holding(m)
	}
	now := f.now()
	if !mayAnnounce(m) {
		f.inMu.Lock()
		f.refused++
		n := f.refused
		if n > 0 && now.Sub(f.refusedAt) >= refusedLogEvery {
			f.refused, f.refusedAt = 0, now
		} else {
			n = 0
		}
		f.inMu.Unlock()
		if n > 0 {
			f.log.Warn("discovery: fleet: ignoring messages on announcement subjects that are not announcements (a server's answers to requests naming the subject as their reply subject, say)",
				"subject", m.Subject, "ignored", n, "every", refusedLogEvery)
		}
		return
	}
	f.inMu.Lock()
	q, ok := f.latest[m.Subject]
	out := 0 // the bytes of the message m replaces
	if len(q) == heldPerSubject {
		out = len(q[0].m.Data)
	}
	if (ok || len(f.latest) < maxHeld) && f.held-out+len(m.Data) <= maxHeldBytes {
		if len(q) == heldPerSubject {
			q = append(q[:0], q[1:]...)
		}
		f.latest[m.Subject] = append(q, heldMsg{m: m, at: now})
		f.held += len(m.Data) - out
		f.waiting[m.Subject] = now
	}
	f.inMu.Unlock()
	select {
	case f.arrived <- struct{}{}:
	default:
	}
}

// announcementKeys are the fields of an announcement (wire.Announcement),
// one of which a msgpack announcement's first key is.
var announcementKeys = map[string]bool{"v": true, "instance": true, "version": true, "queue": true, "incarnation": true, "epoch_ms": true,
	"seq": true, "interval_ms": true, "goodbye": true, "groups": true, "tools": true, "meta": true}

// mayAnnounce is a cheap look at whether m can be an announcement: no
// header a server sets (Status, Nats-*), and a body that is a JSON
// object with the JSON header, or else a msgpack map whose first key is
// an announcement's field. Anyone may make the server publish on any
// subject (a JetStream API request names it as its reply subject: a
// caller role may send those), and what it publishes (a JSON answer
// without headers, a direct get's stored message with its Nats-*
// headers, or without headers a stored value: group state in JSON, a kept
// result, a msgpack frame starting with "kind") fails these.
func mayAnnounce(m *nats.Msg) bool {
	for k := range m.Header {
		if k == "Status" || strings.HasPrefix(k, "Nats-") {
			return false
		}
	}
	if wire.CodecOf(m.Header) == wire.JSON {
		b := bytes.TrimLeft(m.Data, " \t\r\n")
		return len(b) > 0 && b[0] == '{'
	}
	b := m.Data
	switch {
	case len(b) > 0 && b[0]&0xf0 == 0x80: // fixmap
		b = b[1:]
	case len(b) > 2 && b[0] == 0xde: // map 16
		b = b[3:]
	case len(b) > 4 && b[0] == 0xdf: // map 32
		b = b[5:]
	default:
		return false
	}
	var n int
	switch {
	case len(b) > 0 && b[0]&0xe0 == 0xa0: // fixstr
		n, b = int(b[0]&0x1f), b[1:]
	case len(b) > 1 && b[0] == 0xd9: // str 8
		n, b = int(b[1]), b[2:]
	default:
		return false
	}
	return n <= len(b) && announcementKeys[string(b[:n])]
}

func heldSize(q []heldMsg) (n int) {
	for _, h := range q {
		n += len(h.m.Data)
	}
	return n
}

// intake applies the held announcements, one merge per batch.
func (f *Fleet) intake() {
	defer close(f.taken)
	for {
		select {
		case <-f.done:
			return
		case <-f.arrived:
		}
		f.inMu.Lock()
		batch := f.latest
		f.latest, f.held = make(map[string][]heldMsg, len(batch)), 0
		f.inMu.Unlock()
		// The cheapest subjects first: a neighbour's large announcements
		// do not delay the others' (their TTLs run meanwhile, counted
		// from when each announcement arrived, and none expires while
		// one of its own waits here).
		queues := slices.SortedFunc(maps.Values(batch), func(a, b []heldMsg) int { return cmp.Compare(heldSize(a), heldSize(b)) })
		merge := false
		for _, q := range queues {
			for _, h := range q {
				merge = f.apply(h.m, h.at) || merge
			}
			merge = f.settle(q[len(q)-1]) || merge
		}
		if merge {
			f.remerge()
		}
		f.inMu.Lock()
		close(f.read)
		f.read = make(chan struct{})
		f.inMu.Unlock()
	}
}

// settle ends the wait of the subject of h, the last message of it the
// intake applied, unless a later one arrived meanwhile; an instance of
// the subject whose TTL ran out while h waited, and that h did not renew
// (it was malformed, say), is dropped now, unless that later message
// waits: it is settled in turn. True when the merged view must be
// rebuilt.
func (f *Fleet) settle(h heldMsg) bool {
	f.inMu.Lock()
	at, ok := f.waiting[h.m.Subject]
	later := ok && !at.Equal(h.at)
	if ok && !later {
		delete(f.waiting, h.m.Subject)
	}
	f.inMu.Unlock()
	if later {
		return false
	}
	id, ok := strings.CutPrefix(h.m.Subject, wire.SubjectAnnouncePrefix)
	if !ok {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.instances[id]
	if f.closed || in == nil || !in.overdue {
		return false
	}
	f.log.Info("discovery: fleet: instance expired", "instance", id, "last_seen", in.lastSeen, "ttl", in.ttl)
	f.drop(id, in)
	return true
}

// remerge rebuilds the merged view, unless the fleet is closed.
func (f *Fleet) remerge() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.rebuild()
	}
}

// apply takes one announcement, arrived at at, into the fleet's
// instances; true when the merged view must be rebuilt.
func (f *Fleet) apply(m *nats.Msg, at time.Time) bool {
	if f.opts.applying != nil {
		f.opts.applying(m)
	}
	ann, skipped, err := decodeAnnouncement(m)
	if err != nil {
		f.log.Warn("discovery: fleet: ignoring a malformed announcement", "subject", m.Subject, "err", err)
		return false
	}
	if skipped != nil {
		f.log.Warn("discovery: fleet: parts of an announcement left out", "instance", ann.Instance, "err", skipped)
	}
	if tok, ok := strings.CutPrefix(m.Subject, wire.SubjectAnnouncePrefix); ok && tok != ann.Instance {
		f.log.Warn("discovery: fleet: ignoring an announcement on another instance's subject", "subject", m.Subject, "instance", ann.Instance)
		return false
	}
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.pruneRetired(now)
	r := runOf(&ann)
	cur := f.instances[ann.Instance]
	if f.isRetired(ann.Instance, r, at, cur) {
		return false // a run that ended: after its goodbye, or another run's
	}
	// The messages of one run are ordered by their seq; those of two runs
	// by when they arrived here, never by their epochs: the clocks of two
	// machines, or of one before and after it was set back, disagree.
	restart := false // the message ends cur's run
	switch {
	case cur == nil:
	case runOf(&cur.ann) == r:
		// A run's messages leave one connection in seq order, so they
		// arrive in it, but for a discover answer read after a later
		// broadcast: one with a seq not above the last applied is such an
		// answer if it arrived before that one, or soon after (the two
		// subscriptions stamp them apart). One that arrives well after
		// it is the run going on, the last one applied a forgery (a seq
		// far ahead, copied off the subject): it is applied, so a forged
		// seq shadows the run for reorderHorizon at most.
		if ann.Seq <= cur.ann.Seq && !at.After(cur.lastSeen.Add(reorderHorizon)) {
			return false // reordered: an older message
		}
	case at.Before(cur.lastSeen):
		return false // another run's message that arrived before the current run's last
	default:
		restart = true
	}
	// An announcer's interval is the same on every message of a run: a
	// message of the run listed asking a longer one than the run's first
	// was forged (copied off the subject), and kept a worker that died
	// listed for its TTL, up to three hours. It counts with the run's;
	// one asking a shorter one with its own (a forgery heard first is
	// no bound on the real messages), which bounds only that message:
	// the run's next counts with the run's again.
	iv := f.interval(ann)
	runIv := iv
	if cur != nil && !restart {
		runIv = cur.runInterval
		if iv > runIv {
			f.log.Warn("discovery: fleet: an announcement asks a longer interval than its run's first: counted with the run's (an announcer's interval does not change within a run)",
				"instance", ann.Instance, "interval", iv, "run_interval", runIv)
			iv = runIv
		}
	}
	ttl := f.ttlOf(iv)
	if ann.Goodbye {
		if restart {
			f.retire(ann.Instance, runOf(&cur.ann), now.Add(cur.ttl))
		}
		switch {
		case cur == nil:
			f.retireUnseen(ann.Instance, r, now.Add(ttl), at)
		case restart:
			f.retireRun(ann.Instance, retiredRun{run: r, until: now.Add(ttl), bye: at})
		default:
			// An announcer's interval does not change within a run: a
			// goodbye of the run listed asking a longer one is forged
			// (copied off the subject), and, followed by a made-up run
			// of the instance, it hid the worker for up to three hours.
			f.retireRun(ann.Instance, retiredRun{run: r, until: now.Add(min(ttl, cur.ttl)), bye: at})
		}
		if cur != nil {
			f.drop(ann.Instance, cur)
		}
		return cur != nil
	}
	size, was := decodedSize(&ann), 0
	if cur != nil {
		was = cur.size
	}
	if (cur == nil && len(f.instances) >= maxInstances) || f.bytes-was+size > maxInstanceBytes {
		f.log.Warn("discovery: fleet: ignoring an announcement past the fleet's bounds", "instance", ann.Instance, "bytes", len(m.Data), "decoded_bytes", size,
			"instances", len(f.instances), "max_instances", maxInstances, "held_bytes", f.bytes, "max_bytes", maxInstanceBytes)
		return false
	}
	if restart {
		f.log.Info("discovery: fleet: instance restarted: its new run replaces the old", "instance", ann.Instance)
		f.retire(ann.Instance, runOf(&cur.ann), now.Add(cur.ttl))
	}
	changed := cur == nil || !sameOffer(cur.ann, ann)
	if cur != nil {
		cur.timer.Stop()
	}
	f.bytes += size - was
	if cur != nil && cur.lastSeen.After(at) {
		at = cur.lastSeen // a discover answer read while this waited
	}
	in := &instance{ann: ann, lastSeen: at, interval: iv, runInterval: runIv, ttl: ttl, size: size}
	a := announced{run: r, seq: ann.Seq}
	in.timer = time.AfterFunc(max(at.Add(ttl).Sub(now), 0), func() { f.expire(ann.Instance, a) })
	f.instances[ann.Instance] = in
	if !changed {
		f.refreshTimes()
	}
	return changed
}

// expire drops an instance whose TTL passed, unless it was heard from
// since the timer was set. An instance with a message waiting for the
// intake (received, not read yet: the intake is busy decoding others'
// announcements, or a large one of its own) was heard from: it is marked
// overdue and goes only if that message does not renew it (settle).
//
// While the connection is up, the instance is first kept until what the
// connection has received by now is read (catchUp): a client process
// that was frozen (stopped, asleep, paused, in a long GC stop) runs its
// overdue timers on waking before it reads the announcements the server
// sent it meanwhile, and dropped every live instance.
func (f *Fleet) expire(id string, a announced) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.instances[id]
	if f.closed || in == nil || !in.is(a) {
		return
	}
	if f.nc.IsConnected() {
		f.suspects[id] = a
		f.log.Debug("discovery: fleet: instance's TTL over: reading what the connection has received first", "instance", id, "last_seen", in.lastSeen, "ttl", in.ttl)
		if !f.catching {
			f.catching = true
			f.helpers.Add(1)
			go f.catchUp()
		}
		return
	}
	if f.expireNow(id, in) {
		f.rebuild()
	}
}

// expireNow drops instance id, whose TTL is over, unless a message of it
// waits for the intake (then it is marked overdue: settle); true when it
// was dropped. f.mu is held.
func (f *Fleet) expireNow(id string, in *instance) bool {
	f.inMu.Lock()
	at, waiting := f.waiting[wire.AnnounceSubject(id)]
	f.inMu.Unlock()
	if waiting {
		in.overdue = true
		f.log.Debug("discovery: fleet: instance's TTL over while its next announcement is waiting to be read", "instance", id, "last_seen", in.lastSeen, "arrived", at, "ttl", in.ttl)
		return false
	}
	f.log.Info("discovery: fleet: instance expired", "instance", id, "last_seen", in.lastSeen, "ttl", in.ttl)
	f.drop(id, in)
	return true
}

// catchUpFlush bounds the round trip with which catchUp learns that the
// connection has received what the server sent it: past it (the link is
// stalled), the suspects expire as they would have.
const catchUpFlush = time.Second

// catchUpPoll is how often catchUp looks at the subscription's pending
// messages while it waits for them to be read.
const catchUpPoll = 5 * time.Millisecond

// catchUp expires the suspects once what the connection had received
// when their TTL ran out is read, unless it renewed them; suspects added
// meanwhile are taken in the next round.
func (f *Fleet) catchUp() {
	defer f.helpers.Done()
	for {
		f.mu.Lock()
		batch := f.suspects
		if len(batch) == 0 || f.closed {
			f.catching = false
			f.mu.Unlock()
			return
		}
		f.suspects = map[string]announced{}
		f.mu.Unlock()
		f.readReceived()
		f.mu.Lock()
		merge := false
		for id, a := range batch {
			in := f.instances[id]
			if f.closed || in == nil || !in.is(a) {
				continue // renewed (or gone) meanwhile
			}
			merge = f.expireNow(id, in) || merge
		}
		if merge && !f.closed {
			f.rebuild()
		}
		f.mu.Unlock()
	}
}

// readReceived returns once the announcement subscription has handed to
// hold every message the server sent the connection before now: a round
// trip to the server (the server's answer comes after them) and then the
// subscription's messages queued by then. Returns early when the fleet
// closes, and after catchUpFlush when the server does not answer.
func (f *Fleet) readReceived() {
	ctx, cancel := context.WithTimeout(context.Background(), catchUpFlush)
	go func() {
		select {
		case <-f.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := f.nc.FlushWithContext(ctx)
	cancel()
	if err != nil {
		return
	}
	// Every message queued when pending is read has been handled once
	// handled, read after it, has grown by pending (pending counts a
	// message until after its handler has returned, handled from just
	// before), or once nothing is pending.
	pending, _, err := f.sub.Pending()
	if err != nil {
		return
	}
	target := f.handled.Load() + uint64(pending)
	tick := time.NewTicker(catchUpPoll)
	defer tick.Stop()
	for f.handled.Load() < target {
		select {
		case <-tick.C:
		case <-f.done:
			return
		}
		if n, _, err := f.sub.Pending(); err != nil || n == 0 {
			return
		}
	}
}

// drop forgets instance id; f.mu is held.
func (f *Fleet) drop(id string, in *instance) {
	in.timer.Stop()
	delete(f.instances, id)
	f.bytes -= in.size
}

// now is the time on the fleet's clock.
func (f *Fleet) now() time.Time {
	if f.opts.clock != nil {
		return f.opts.clock()
	}
	return time.Now()
}

// interval is the announce interval ann asks: DefaultInterval when
// none, MaxInterval at most.
func (f *Fleet) interval(ann wire.Announcement) time.Duration {
	if ann.IntervalMS <= 0 {
		return DefaultInterval
	}
	return time.Duration(min(ann.IntervalMS, MaxInterval.Milliseconds())) * time.Millisecond
}

// ttlOf is the TTL of an instance announcing every iv.
func (f *Fleet) ttlOf(iv time.Duration) time.Duration {
	if f.opts.TTL > 0 {
		return f.opts.TTL
	}
	return DefaultTTLFactor * iv
}

// refreshTimes updates LastSeen/Expires without re-merging; f.mu is held.
func (f *Fleet) refreshTimes() {
	v := *f.view.Load()
	v.instances = f.instanceList()
	f.view.Store(&v)
}

func (f *Fleet) instanceList() []Instance {
	ids := slices.Sorted(maps.Keys(f.instances))
	out := make([]Instance, 0, len(ids))
	for _, id := range ids {
		in := f.instances[id]
		x := Instance{ID: id, Version: in.ann.Version, Queue: in.ann.Queue,
			Interval: in.interval,
			LastSeen: in.lastSeen, Expires: in.lastSeen.Add(in.ttl), Meta: in.ann.Meta}
		for _, g := range in.ann.Groups {
			x.Groups = append(x.Groups, g.Name)
		}
		for _, t := range in.ann.Tools {
			x.Tools = append(x.Tools, t.Name)
		}
		out = append(out, x)
	}
	return out
}

// rebuild merges the instances into a new view and schedules the
// notification; f.mu is held. Announcements were checked when they were
// decoded, so merging only picks the first of each name.
func (f *Fleet) rebuild() {
	v := &view{instances: f.instanceList()}
	groups := map[string]bool{toolkit.BasicGroup: true}
	toolAt := map[string]int{}
	listed := map[int]map[string]bool{} // the union of a merged conditional tool's ListedWith
	for _, id := range slices.Sorted(maps.Keys(f.instances)) {
		ann := f.instances[id].ann
		for _, g := range ann.Groups {
			if groups[g.Name] {
				continue
			}
			groups[g.Name] = true
			v.catalog.Groups = append(v.catalog.Groups, toolkit.Group{Name: g.Name, Description: g.Description, Instructions: g.Instructions, Active: g.Active})
		}
		for _, t := range ann.Tools {
			if i, dup := toolAt[t.Name]; dup {
				v.tools[i].Instances = append(v.tools[i].Instances, id)
				ct := &v.catalog.Tools[i]
				switch {
				case !t.Conditional: // listed by one, listed
					ct.Conditional, ct.ListedWith = false, nil
				case ct.Conditional:
					set := listed[i]
					if set == nil {
						set = make(map[string]bool, len(ct.ListedWith))
						for _, g := range ct.ListedWith {
							set[g] = true
						}
						listed[i] = set
					}
					for _, g := range t.ListedWith {
						if !set[g] {
							set[g] = true
							ct.ListedWith = append(ct.ListedWith, g)
						}
					}
				}
				continue
			}
			toolAt[t.Name] = len(v.tools)
			v.tools = append(v.tools, Tool{AnnouncedTool: t, Instances: []string{id}})
			v.catalog.Tools = append(v.catalog.Tools, toolkit.CatalogTool{Group: t.Group, Schema: toolkit.FunctionSchema{
				Type: "function", Function: toolkit.Function{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Order: t.Order}},
				Conditional: t.Conditional, ListedWith: slices.Clone(t.ListedWith)})
		}
	}
	v.toolAt = toolAt
	f.view.Store(v)
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// decodeAnnouncement decodes (JSON when the message says so, msgpack
// otherwise) and checks an announcement. Tools and groups that cannot be
// listed (a name that is not a token of at most toolkit.MaxNameLen
// bytes, a schema that is not an object
// schema, an unknown group, a group without a description, a name
// announced before in the same announcement) are left out, and so are
// listed_with names that are not basic or a group of it; the rest counts; skipped says what was left out and why. Parameters are
// normalised to what encoding/json produces, whatever the encoding.
func decodeAnnouncement(m *nats.Msg) (ann wire.Announcement, skipped, err error) {
	if err := wire.CodecOf(m.Header).Unmarshal(m.Data, &ann); err != nil {
		return ann, nil, fmt.Errorf("undecodable body of %d bytes: %w", len(m.Data), err)
	}
	switch {
	case ann.Format < 1:
		return ann, nil, fmt.Errorf("missing or bad format version %d", ann.Format)
	case !toolkit.ValidName(ann.Instance):
		return ann, nil, fmt.Errorf("invalid instance id %q", ann.Instance)
	case ann.IntervalMS < 0:
		return ann, nil, fmt.Errorf("negative interval %d ms", ann.IntervalMS)
	case len(ann.Incarnation) > maxIncarnation:
		return ann, nil, fmt.Errorf("incarnation of %d bytes, over %d", len(ann.Incarnation), maxIncarnation)
	}
	var errs []error
	groups := map[string]bool{toolkit.BasicGroup: true}
	ann.Groups = slices.DeleteFunc(ann.Groups, func(g wire.AnnouncedGroup) bool {
		switch {
		case !toolkit.ValidName(g.Name) || len(g.Name) > toolkit.MaxNameLen || g.Name == toolkit.BasicGroup:
			errs = append(errs, fmt.Errorf("group %.128q: invalid name (a token of [A-Za-z0-9_-] of at most %d bytes, not basic)", g.Name, toolkit.MaxNameLen))
		case groups[g.Name]:
			errs = append(errs, fmt.Errorf("group %q: announced twice", g.Name))
		case g.Description == "":
			errs = append(errs, fmt.Errorf("group %q: no description", g.Name))
		default:
			groups[g.Name] = true
			return false
		}
		return true
	})
	for i := range ann.Tools {
		if ann.Tools[i].Group == "" {
			ann.Tools[i].Group = toolkit.BasicGroup
		}
	}
	tools := map[string]bool{}
	ann.Tools = slices.DeleteFunc(ann.Tools, func(t wire.AnnouncedTool) bool {
		var err error
		switch {
		case !toolkit.ValidToolName(t.Name) || t.Name == toolkit.MetaToolName:
			err = fmt.Errorf("invalid name (a token of [A-Za-z0-9_-] of at most %d bytes)", toolkit.MaxNameLen)
		case tools[t.Name]:
			err = errors.New("announced twice")
		case !groups[t.Group]:
			err = fmt.Errorf("group %q not announced", t.Group)
		default:
			err = toolkit.CheckInputSchema(t.Parameters)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("tool %.128q: %w", t.Name, err))
		} else {
			tools[t.Name] = true
		}
		return err != nil
	})
	for i := range ann.Tools {
		t := &ann.Tools[i]
		if !t.Conditional {
			t.ListedWith = nil
		} else if left := listedWith(t, groups); left > 0 {
			errs = append(errs, fmt.Errorf("tool %q: %d listed_with entries that are not basic or a group of the announcement, or named twice, left out", t.Name, left))
		}
		p, err := jsonShaped(t.Parameters)
		if err != nil {
			return ann, nil, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
		t.Parameters, _ = p.(map[string]any)
	}
	return ann, errors.Join(errs...), nil
}

// listedWith keeps in t.ListedWith the names that are basic or one of
// groups, each once, and returns how many it left out: a fleet merges
// the lists of every instance, so they hold no more than the announcement
// has groups.
func listedWith(t *wire.AnnouncedTool, groups map[string]bool) (left int) {
	seen := make(map[string]bool, min(len(t.ListedWith), len(groups)))
	n := len(t.ListedWith)
	t.ListedWith = slices.DeleteFunc(t.ListedWith, func(g string) bool {
		if !groups[g] || seen[g] {
			return true
		}
		seen[g] = true
		return false
	})
	return n - len(t.ListedWith)
}

// is reports whether a names the instance's announcement.
func (in *instance) is(a announced) bool { return runOf(&in.ann) == a.run && in.ann.Seq == a.seq }

// retire remembers that run r of instance id ended, until until; f.mu is
// held. An instance keeps its retiredPerInstance latest ended runs, and
// the fleet maxRetired in all: past it, the run that ended first goes
// first, whatever its TTL. Runs made up by a neighbour asking the
// longest TTL pushed out the real runs ending soonest (a worker's
// goodbye, kept for 6 s) at once; now a run is forgotten early only once
// maxRetired runs have ended after it.
func (f *Fleet) retire(id string, r run, until time.Time) {
	f.retireRun(id, retiredRun{run: r, until: until})
}

// retireUnseen remembers the goodbye of run r of instance id, arrived at
// bye, which the fleet does not list (a discover answer of it may wait
// to be read), until until, as retire does; f.mu is held. Such goodbyes are
// remembered maxGoodbyes at most, on their own: past that, the oldest of
// them is forgotten, so goodbyes of invented ids cannot keep a real one
// from being remembered (nor can the ended runs of instances listed).
func (f *Fleet) retireUnseen(id string, r run, until, bye time.Time) {
	if f.nUnseen >= maxGoodbyes {
		f.forgetOldestUnseen()
	}
	x := retiredRun{run: r, until: until, bye: bye, unseen: true}
	f.retireRun(id, x)
	f.unseen = append(f.unseen, retiredMark{id: id, retiredRun: x})
	if len(f.unseen) > 2*max(f.nUnseen, 64) { // most of them forgotten since
		f.unseen = slices.DeleteFunc(f.unseen, func(m retiredMark) bool { return !slices.Contains(f.retired[m.id], m.retiredRun) })
	}
}

// forgetOldestUnseen forgets the oldest goodbye retireUnseen remembers;
// f.mu is held.
func (f *Fleet) forgetOldestUnseen() {
	for len(f.unseen) > 0 {
		m := f.unseen[0]
		f.unseen = f.unseen[1:]
		if f.forget(m) {
			return
		}
	}
}

// retireRun remembers x, an ended run of instance id; f.mu is held.
func (f *Fleet) retireRun(id string, x retiredRun) {
	if f.nRetired >= maxRetired {
		f.forgetOldest()
	}
	rs := f.retired[id]
	if i := slices.IndexFunc(rs, func(y retiredRun) bool { return y.run == x.run }); i >= 0 {
		f.uncount(rs[i])
		rs = slices.Delete(rs, i, i+1)
	}
	if len(rs) == retiredPerInstance {
		f.uncount(rs[0])
		rs = slices.Delete(rs, 0, 1)
	}
	f.retired[id] = append(rs, x)
	f.nRetired++
	if x.unseen {
		f.nUnseen++
	}
	m := retiredMark{id: id, retiredRun: x}
	heap.Push(&f.retiredBy, m)
	if len(f.retiredBy) > 2*max(f.nRetired, 64) {
		f.remarkRetired() // most marks are of runs replaced since
	}
	f.retiredIn = append(f.retiredIn, m)
	if len(f.retiredIn) > 2*max(f.nRetired, 64) { // most of them forgotten or replaced since
		f.retiredIn = slices.DeleteFunc(f.retiredIn, func(m retiredMark) bool { return !slices.Contains(f.retired[m.id], m.retiredRun) })
	}
}

// uncount takes x, an ended run no longer remembered, off the counts;
// f.mu is held.
func (f *Fleet) uncount(x retiredRun) {
	f.nRetired--
	if x.unseen {
		f.nUnseen--
	}
}

// isRetired reports whether a message of run r of instance id that
// arrived at at is of a run that ended, cur the instance as listed (or
// nil); f.mu is held. After a goodbye, the run's messages that arrived
// up to reorderHorizon after it (a discover answer read late) are; a
// later one is the run going on, unless another run is listed: a run's
// messages leave one connection in seq order, the goodbye last, so the
// goodbye was forged (copied off the subject with a later seq), and the
// worker is listed again with its next announcement rather than hidden
// for the goodbye's TTL.
func (f *Fleet) isRetired(id string, r run, at time.Time, cur *instance) bool {
	return slices.ContainsFunc(f.retired[id], func(x retiredRun) bool {
		return x.run == r && (x.bye.IsZero() || !at.After(x.bye.Add(reorderHorizon)) || (cur != nil && runOf(&cur.ann) != r))
	})
}

// pruneRetired forgets the ended runs remembered until before now; f.mu
// is held.
func (f *Fleet) pruneRetired(now time.Time) {
	for len(f.retiredBy) > 0 && now.After(f.retiredBy[0].until) {
		f.forget(heap.Pop(&f.retiredBy).(retiredMark))
	}
}

// forgetOldest forgets the ended run remembered the longest; f.mu is
// held.
func (f *Fleet) forgetOldest() {
	for len(f.retiredIn) > 0 {
		m := f.retiredIn[0]
		f.retiredIn = f.retiredIn[1:]
		if f.forget(m) {
			return
		}
	}
}

// forget forgets the ended run m marks, unless it was replaced since
// (retired again, or pushed out by its instance's later runs): false
// then. f.mu is held.
func (f *Fleet) forget(m retiredMark) bool {
	rs := f.retired[m.id]
	i := slices.IndexFunc(rs, func(x retiredRun) bool {
		return x.run == m.run && x.until.Equal(m.until) && x.bye.Equal(m.bye) && x.unseen == m.unseen
	})
	if i < 0 {
		return false
	}
	f.uncount(rs[i])
	if len(rs) == 1 {
		delete(f.retired, m.id)
	} else {
		f.retired[m.id] = slices.Delete(rs, i, i+1)
	}
	return true
}

// remarkRetired rebuilds retiredBy from retired, leaving out the marks
// of runs replaced since; f.mu is held.
func (f *Fleet) remarkRetired() {
	marks := make(retiredMarks, 0, f.nRetired)
	for id, rs := range f.retired {
		for _, x := range rs {
			marks = append(marks, retiredMark{id: id, retiredRun: x})
		}
	}
	heap.Init(&marks)
	f.retiredBy = marks
}

// sameOffer reports whether two announcements of an instance offer the
// same, so the view need not be merged again.
func sameOffer(a, b wire.Announcement) bool {
	return a.Version == b.Version && a.Queue == b.Queue && a.IntervalMS == b.IntervalMS &&
		reflect.DeepEqual(a.Groups, b.Groups) && reflect.DeepEqual(a.Tools, b.Tools) &&
		reflect.DeepEqual(a.Meta, b.Meta)
}

// cloneTool copies every part of t a caller could change: its
// instances, schema, key order and the groups it is listed with.
func cloneTool(t Tool) Tool {
	t.Instances = slices.Clone(t.Instances)
	if t.Parameters != nil {
		t.Parameters = cloneJSON(t.Parameters).(map[string]any)
	}
	if t.Order != nil {
		t.Order = slices.Clone(t.Order)
		for i := range t.Order {
			t.Order[i].Keys = slices.Clone(t.Order[i].Keys)
		}
	}
	t.ListedWith = slices.Clone(t.ListedWith)
	return t
}

// cloneJSON deep-copies a JSON-shaped value (jsonShaped): its maps and
// slices; the scalars are immutable.
func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, e := range v {
			c[k] = cloneJSON(e)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = cloneJSON(e)
		}
		return c
	}
	return v
}

// reorderHorizon is how much later than the message of a run applied
// last another message of the run with a seq not above it may arrive and
// still be ignored as reordered: a discover answer and a broadcast are
// stamped on arrival by two subscriptions, which a busy machine runs
// apart. Past it, the message is applied (see apply).
const reorderHorizon = time.Second
