package discovery

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// DefaultInterval is how often an Announcer repeats itself.
const DefaultInterval = 2 * time.Second

// AnnouncerOptions configure NewAnnouncer. A nil *AnnouncerOptions means
// the defaults; so does every zero field.
type AnnouncerOptions struct {
	// Instance identifies this worker: one subject token [A-Za-z0-9_-]+.
	// "" means a random id. Two live processes must not share one.
	Instance string
	// Version is announced as is.
	Version string
	// Queue is the queue group the worker serves calls in, announced as is.
	Queue string
	// Interval between announcements; 0 means DefaultInterval.
	Interval time.Duration
	// Logger receives publish failures; nil means slog.Default(). It is
	// called on a goroutine of the Announcer's own, through a queue (see
	// the package doc, Callbacks and logging).
	Logger *slog.Logger
	// Meta adds parts to every announcement (wire.Announcement.Meta):
	// each function is called for every announcement and its value,
	// turned into JSON-shaped data, travels under its key. Packages
	// announce their own parts this way (skills, permissions); a value
	// that cannot be turned into JSON is logged and left out. The
	// functions run on goroutines of the Announcer's, and an announcement
	// waits for each at most the Interval (at most 1 s): one slower goes
	// out with its last value (see the package doc, Callbacks and
	// logging).
	Meta map[string]func() any

	// clock, when set, is the announcer's clock instead of time.Now:
	// tests start workers whose clocks disagree.
	clock func() time.Time
}

// Announcer announces a Toolkit's tools for a worker: at start, whenever
// the toolkit changes (Toolkit.OnChange), every Interval, and in answer to
// requests on wire.SubjectDiscover (a bounded number per window, the rest
// by one broadcast: see answerWindow); Stop publishes a goodbye.
//
// All messages of an Announcer are published under one lock, so they
// leave in Seq order and nothing follows the goodbye; none of its user's
// code (Meta functions, Logger) runs under it. Its goroutines end with
// Stop. Methods are safe for concurrent use.
type Announcer struct {
	nc       *nats.Conn
	tk       *toolkit.Toolkit
	opts     AnnouncerOptions
	subject  string
	run      string // a random id of this run: wire.Announcement.Incarnation
	epoch    int64
	log      *slog.Logger // queues for opts.Logger (logq)
	logq     *logQueue
	changed  chan struct{}
	stopLoop chan struct{}
	loopDone chan struct{}
	unwatch  func()
	sub      *nats.Subscription

	mu      sync.Mutex // serialises publishing; guards what follows
	seq     uint64
	stopped bool
	window  time.Time          // when the current answer window began
	answers int                // discover requests answered in it
	owed    *time.Timer        // the announcement owed to requests over the bound
	paid    time.Time          // when the last owed announcement went out
	fit     *wire.Announcement // the last announcement that could be published

	// The Meta functions (announcer_meta.go); metaMu is taken inside mu,
	// never around it.
	metaMu      sync.Mutex
	metaKeys    []string // sorted
	meta        map[string]*metaPart
	metaStopped bool
	metaCalls   sync.WaitGroup
}

// Discover requests are answered at most answersPerWindow times per
// answerWindow: any caller may send them, and each answer is a whole
// announcement. The bound is far above a burst of fleets starting
// together (each is answered directly, within its discover window even
// on a busy machine) and far below a flood. The requests beyond are answered together by an
// announcement on the instance's subject, which the asking fleets receive
// (they subscribe to announcements before they ask): at once, or
// owedEvery after the previous such announcement, well within an asking
// fleet's discover window.
const (
	answerWindow     = 250 * time.Millisecond
	answersPerWindow = 256
	owedEvery        = 25 * time.Millisecond
)

// NewAnnouncer starts announcing tk on nc. It publishes the first
// announcement before returning and fails if that is impossible (for
// example an announcement larger than the server's max_payload).
func NewAnnouncer(nc *nats.Conn, tk *toolkit.Toolkit, opts *AnnouncerOptions) (*Announcer, error) {
	var o AnnouncerOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case nc == nil:
		return nil, errors.New("discovery: NewAnnouncer: nil connection")
	case tk == nil:
		return nil, errors.New("discovery: NewAnnouncer: nil toolkit")
	case o.Interval < 0:
		return nil, fmt.Errorf("discovery: NewAnnouncer: negative interval %v", o.Interval)
	case o.Interval > 0 && o.Interval < time.Millisecond:
		return nil, fmt.Errorf("discovery: NewAnnouncer: interval %v is under the wire's 1 ms resolution", o.Interval)
	case o.Instance != "" && !toolkit.ValidName(o.Instance):
		return nil, fmt.Errorf("discovery: NewAnnouncer: invalid instance id %q: must match [A-Za-z0-9_-]+ (one subject token)", o.Instance)
	}
	if o.Instance == "" {
		o.Instance = rand.Text()
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	o.Meta = maps.Clone(o.Meta)
	now := time.Now
	if o.clock != nil {
		now = o.clock
	}
	a := &Announcer{
		nc:       nc,
		tk:       tk,
		opts:     o,
		subject:  wire.AnnounceSubject(o.Instance),
		run:      rand.Text(),
		epoch:    now().UnixMilli(),
		changed:  make(chan struct{}, 1),
		stopLoop: make(chan struct{}),
		loopDone: make(chan struct{}),
		metaKeys: slices.Sorted(maps.Keys(o.Meta)),
		meta:     make(map[string]*metaPart, len(o.Meta)),
	}
	for key, fn := range o.Meta {
		a.meta[key] = &metaPart{fn: fn}
	}
	var log *slog.Logger
	a.logq, log = newLogQueue("announcer", o.Logger.Handler())
	a.log = log.With("instance", o.Instance)
	if err := a.announce(); err != nil {
		a.release()
		return nil, err
	}
	sub, err := nc.Subscribe(wire.SubjectDiscover, a.answer)
	if err != nil {
		a.release()
		return nil, fmt.Errorf("discovery: announcer %s: subscribing to %s: %w", o.Instance, wire.SubjectDiscover, err)
	}
	a.sub = sub
	// The discover subscription is on the server once Flush returns: a
	// fleet started after NewAnnouncer (or bus.Serve) returns gets an
	// answer, not "no responders".
	if err := nc.Flush(); err != nil {
		sub.Unsubscribe()
		a.release()
		return nil, fmt.Errorf("discovery: announcer %s: flushing the %s subscription: %w", o.Instance, wire.SubjectDiscover, err)
	}
	a.unwatch = tk.OnChange(func() {
		select {
		case a.changed <- struct{}{}:
		default:
		}
	})
	go a.loop()
	return a, nil
}

// Instance returns the announced instance id.
func (a *Announcer) Instance() string { return a.opts.Instance }

// Announcement returns what the announcer would publish now (with the
// sequence number of its last message). It calls the Meta functions, and
// waits for them as an announcement does.
func (a *Announcer) Announcement() wire.Announcement {
	a.refreshMeta()
	a.mu.Lock()
	ann := a.build(a.seq)
	a.mu.Unlock()
	if ann.Meta != nil {
		// The caller's own copy: the values are shared with later
		// announcements.
		m, _ := jsonShaped(ann.Meta)
		ann.Meta, _ = m.(map[string]any)
	}
	return ann
}

// Stop stops announcing and publishes a goodbye, so fleets drop the
// instance at once; it returns once the announcer's goroutines have
// ended: the Meta function calls in flight return and the queued log
// records are written first, however long that takes. It is idempotent.
func (a *Announcer) Stop() error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	if a.owed != nil {
		a.owed.Stop()
	}
	a.seq++
	bye := wire.Announcement{Format: wire.AnnounceFormat, Instance: a.opts.Instance, Version: a.opts.Version, Queue: a.opts.Queue,
		Incarnation: a.run, EpochMS: a.epoch, Seq: a.seq, IntervalMS: a.opts.Interval.Milliseconds(), Goodbye: true,
		Groups: []wire.AnnouncedGroup{}, Tools: []wire.AnnouncedTool{}}
	err := a.publish(a.subject, nil, &bye)
	a.mu.Unlock()
	a.unwatch()
	uerr := a.sub.Unsubscribe()
	close(a.stopLoop)
	<-a.loopDone
	a.release()
	if err == nil && a.nc.IsConnected() {
		// Bounded: a stopping worker cut off from NATS does not wait for
		// the server; the goodbye goes out if the connection comes back
		// before it closes, and the fleet drops the worker at its TTL
		// otherwise.
		err = a.nc.FlushTimeout(2 * time.Second)
	}
	return errors.Join(ignoreClosed(err), ignoreClosed(uerr))
}

// release waits for the Meta function calls in flight, then for the
// queued log records to be written.
func (a *Announcer) release() {
	a.stopMeta()
	a.logq.close()
}

func (a *Announcer) loop() {
	defer close(a.loopDone)
	tick := time.NewTicker(a.opts.Interval)
	defer tick.Stop()
	for {
		select {
		case <-a.stopLoop:
			return
		case <-tick.C:
		case <-a.changed:
		}
		if err := a.announce(); err != nil {
			if a.nc.IsClosed() {
				a.log.Warn("discovery: announcer stops: its connection is closed")
				return
			}
			a.log.Error("discovery: announcing tools", "err", err)
		}
	}
}

// announce publishes the current announcement on its subject.
func (a *Announcer) announce() error {
	a.refreshMeta()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return nil
	}
	a.seq++
	ann := a.build(a.seq)
	return a.publishFitting(a.subject, nil, &ann)
}

// answer replies to a discover request, in JSON when asked.
func (a *Announcer) answer(m *nats.Msg) {
	if m.Reply == "" {
		a.log.Warn("discovery: discover request without a reply subject", "subject", m.Subject)
		return
	}
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return
	}
	now := time.Now()
	if now.Sub(a.window) >= answerWindow {
		a.window, a.answers = now, 0
	}
	if a.answers >= answersPerWindow {
		if a.owed == nil {
			a.owed = time.AfterFunc(max(a.paid.Add(owedEvery).Sub(now), 0), a.payOwed)
		}
		a.mu.Unlock()
		return
	}
	a.answers++
	a.mu.Unlock()
	a.refreshMeta()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	a.seq++
	ann := a.build(a.seq)
	if err := a.publishFitting(m.Reply, m, &ann); err != nil {
		a.log.Error("discovery: answering a discover request", "err", err)
	}
}

// payOwed announces for the discover requests left unanswered.
func (a *Announcer) payOwed() {
	a.mu.Lock()
	a.owed, a.paid = nil, time.Now()
	a.mu.Unlock()
	if err := a.announce(); err != nil {
		a.log.Error("discovery: announcing tools", "err", err)
	}
}

// publishFitting publishes ann (see publish); when it is over the
// server's max_payload (the toolkit grew: an MCP server mounted later
// lists many tools), it publishes the last announcement that fit instead,
// under ann's seq, so fleets keep the worker listed with the tools it
// announced then rather than expiring a live worker; the error says so.
// a.mu is held.
func (a *Announcer) publishFitting(subject string, req *nats.Msg, ann *wire.Announcement) error {
	err := a.publish(subject, req, ann)
	switch {
	case err == nil:
		a.fit = ann
	case errors.Is(err, nats.ErrMaxPayload) && a.fit != nil:
		last := *a.fit
		last.Seq = ann.Seq
		if lerr := a.publish(subject, req, &last); lerr != nil {
			return errors.Join(err, lerr)
		}
		err = fmt.Errorf("%w; the last announcement that fit (%d tools) went out instead", err, len(last.Tools))
	}
	return err
}

// readableAnnouncement is the largest JSON announcement: a bigger one
// goes out in msgpack.
const readableAnnouncement = 16 << 10

// publish sends one announcement, as the answer to req when it is not
// nil; a.mu is held.
func (a *Announcer) publish(subject string, req *nats.Msg, ann *wire.Announcement) error {
	var err error
	var size int
	if req != nil {
		err = wire.Respond(a.nc, req, ann)
	} else {
		// JSON a person reads on `nats sub 'tools.>'`, unless that is big
		// (many tools with large schemas): then the smaller msgpack.
		c := wire.JSON
		data, jerr := c.Marshal(ann)
		if jerr != nil || len(data) > readableAnnouncement {
			c = wire.Msgpack
			data, err = c.Marshal(ann)
		}
		if err == nil {
			size = len(data)
			err = a.nc.PublishMsg(&nats.Msg{Subject: subject, Header: c.Header(), Data: data})
		}
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		return fmt.Errorf("discovery: announcer %s: the announcement of %d tools is %d bytes, over the server's max_payload of %d: %w",
			ann.Instance, len(ann.Tools), size, a.nc.MaxPayload(), err)
	}
	if err != nil {
		return fmt.Errorf("discovery: announcer %s: publishing on %s: %w", ann.Instance, subject, err)
	}
	return nil
}

// build snapshots the toolkit and the meta parts' last values; a.mu is
// held.
func (a *Announcer) build(seq uint64) wire.Announcement {
	ann := wire.Announcement{
		Format:      wire.AnnounceFormat,
		Instance:    a.opts.Instance,
		Version:     a.opts.Version,
		Queue:       a.opts.Queue,
		EpochMS:     a.epoch,
		Incarnation: a.run,
		Seq:         seq,
		IntervalMS:  a.opts.Interval.Milliseconds(),
		Groups:      []wire.AnnouncedGroup{},
		Tools:       []wire.AnnouncedTool{},
	}
	c := a.tk.Catalog()
	groups := map[string]bool{toolkit.BasicGroup: true}
	for _, g := range c.Groups {
		groups[g.Name] = true
		ann.Groups = append(ann.Groups, wire.AnnouncedGroup{Name: g.Name, Description: g.Description, Instructions: g.Instructions, Active: g.Active})
	}
	for _, ct := range c.Tools {
		t, ok := a.tk.Get(ct.Schema.Function.Name)
		if !ok || !groups[ct.Group] {
			continue // changed since the catalog was read: the change's own announcement follows
		}
		ann.Tools = append(ann.Tools, wire.AnnouncedTool{
			Name: t.Name, Description: t.Description, Group: ct.Group,
			ReadOnly: t.ReadOnly(), ConcurrencySafe: t.ConcurrencySafe(), Idempotency: t.Idempotency().String(),
			Parameters: ct.Schema.Function.Parameters, Order: ct.Schema.Function.Order,
			Conditional: ct.Conditional, ListedWith: ct.ListedWith, Kind: t.Kind(),
		})
	}
	ann.Meta = a.metaValues()
	return ann
}

// jsonShaped is v as encoding/json reads it back: maps, slices, strings,
// float64 numbers, bools and nil, so both encodings carry the same data.
func jsonShaped(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

func ignoreClosed(err error) error {
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrBadSubscription) {
		return nil
	}
	return err
}
