package bus

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/toolbus/toolbus/skill"
	"github.com/toolbus/toolbus/toolkit"
)

// Discovery wire constants (documented in statedoc.md).
const (
	// SubjectAnnounce is the prefix of the subject an Announcer publishes
	// on: tools.announce.<instance>. Fleets subscribe to tools.announce.*.
	SubjectAnnounce = "tools.announce"
	// SubjectDiscover is the subject every Announcer answers (no queue
	// group): a request on it collects one announcement per live instance.
	SubjectDiscover = "tools.discover"
	// AnnounceFormat is the version of the announcement schema, sent in its
	// "v" field. Readers accept any version >= 1 and ignore unknown fields.
	AnnounceFormat = 1
	// DefaultAnnounceInterval is how often an Announcer repeats itself.
	DefaultAnnounceInterval = 2 * time.Second
	// DefaultFleetTTLFactor: a Fleet drops an instance not heard from for
	// this many of the instance's announced intervals.
	DefaultFleetTTLFactor = 3
	// DefaultDiscoverWindow is how long a Fleet collects answers to its
	// discover request.
	DefaultDiscoverWindow = 250 * time.Millisecond

	// discoveryHeaderContentType and discoveryJSON: a discover request with
	// this header and value is answered in JSON; everything else is
	// msgpack.
	discoveryHeaderContentType = "Content-Type"
	discoveryJSON              = "application/json"
)

// Announcement is what an Announcer publishes on tools.announce.<instance>
// and answers on tools.discover: who the instance is and what it serves.
// Field names are the same in msgpack and JSON.
type Announcement struct {
	// Format is AnnounceFormat.
	Format int `json:"v" msgpack:"v"`
	// Instance identifies the worker process: one subject token.
	Instance string `json:"instance" msgpack:"instance"`
	// Version is the worker's (or its tools') version, free-form.
	Version string `json:"version,omitempty" msgpack:"version,omitempty"`
	// Queue is the queue group the instance serves calls in.
	Queue string `json:"queue,omitempty" msgpack:"queue,omitempty"`
	// EpochMS is when the announcer started (Unix milliseconds, exact in
	// a JSON number) and Seq counts its announcements from 1: (EpochMS,
	// Seq) orders the messages of one instance id, also across a restart
	// with the same id.
	EpochMS int64  `json:"epoch_ms" msgpack:"epoch_ms"`
	Seq     uint64 `json:"seq" msgpack:"seq"`
	// IntervalMS is the announcer's repeat interval in milliseconds; a
	// Fleet derives the instance's TTL from it.
	IntervalMS int64 `json:"interval_ms" msgpack:"interval_ms"`
	// Goodbye is set on the last message of a stopping instance; its
	// groups and tools are empty.
	Goodbye bool `json:"goodbye,omitempty" msgpack:"goodbye,omitempty"`
	// Groups are the instance's non-basic groups, in registration order.
	Groups []AnnouncedGroup `json:"groups" msgpack:"groups"`
	// Tools are the instance's tools in registration order (reset_tools
	// is not listed: it exists whenever Groups is not empty).
	Tools []AnnouncedTool `json:"tools" msgpack:"tools"`
	// Skills the worker declares (without their bodies), in its group
	// order; absent when it has none. See AnnouncedSkill.
	Skills []AnnouncedSkill `json:"skills,omitempty" msgpack:"skills,omitempty"`
	// Permissions are the worker-wide permission defaults when the worker
	// checks permissions; absent when it runs every call unchecked.
	Permissions *AnnouncedPermissions `json:"permissions,omitempty" msgpack:"permissions,omitempty"`
}

// AnnouncedPermissions are a worker's permission defaults: the mode of
// sessions that set none and its worker-wide rules (TOOL or TOOL:PATTERN),
// so clients can leave out of a session's listing what it can never run.
type AnnouncedPermissions struct {
	Mode  string   `json:"mode" msgpack:"mode"`
	Allow []string `json:"allow,omitempty" msgpack:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty" msgpack:"deny,omitempty"`
	Ask   []string `json:"ask,omitempty" msgpack:"ask,omitempty"`
}

// AnnouncedGroup is a tool group as announced.
type AnnouncedGroup struct {
	Name         string `json:"name" msgpack:"name"`
	Description  string `json:"description" msgpack:"description"`
	Instructions string `json:"instructions,omitempty" msgpack:"instructions,omitempty"`
	// Active is the group's state for sessions without stored state.
	Active bool `json:"active,omitempty" msgpack:"active,omitempty"`
}

// AnnouncedTool is a tool as announced: its schema as the model sees it
// (presets removed, extensions added) and its flags.
type AnnouncedTool struct {
	Name        string `json:"name" msgpack:"name"`
	Description string `json:"description" msgpack:"description"`
	// Group is "basic" or one of the announcement's groups.
	Group           string `json:"group" msgpack:"group"`
	ReadOnly        bool   `json:"read_only,omitempty" msgpack:"read_only,omitempty"`
	ConcurrencySafe bool   `json:"concurrency_safe,omitempty" msgpack:"concurrency_safe,omitempty"`
	// Idempotency is toolkit.Idempotency's String: "unknown",
	// "no_side_effects" or "idempotent".
	Idempotency string `json:"idempotency" msgpack:"idempotency"`
	// Parameters is the JSON schema of the input (type object).
	Parameters map[string]any `json:"parameters" msgpack:"parameters"`
}

// IdempotencyLevel parses Idempotency; an unknown string is
// toolkit.IdempotencyUnknown.
func (t AnnouncedTool) IdempotencyLevel() toolkit.Idempotency {
	switch t.Idempotency {
	case toolkit.NoSideEffects.String():
		return toolkit.NoSideEffects
	case toolkit.Idempotent.String():
		return toolkit.Idempotent
	}
	return toolkit.IdempotencyUnknown
}

// AnnouncerConfig configures NewAnnouncer. The zero value means the
// defaults.
type AnnouncerConfig struct {
	// Instance identifies this worker: one subject token [A-Za-z0-9_-]+.
	// "" means a random id. Two live processes must not share one.
	Instance string
	// Version is announced as is.
	Version string
	// Queue is the queue group the worker serves calls in, announced as is.
	Queue string
	// Interval between announcements; 0 means DefaultAnnounceInterval.
	Interval time.Duration
	// Logger receives publish failures; nil means slog.Default().
	Logger *slog.Logger
	// Skills, when set, is announced with the tools (a *skill.Set is
	// one); it is read for every announcement, so edited SKILL.md files
	// show within an interval.
	Skills SkillCatalog
	// Permissions, when set, is announced as is.
	Permissions *AnnouncedPermissions
}

// Announcer announces a Toolkit's tools for a worker: at start, whenever
// the toolkit changes (Toolkit.OnChange), every Interval, and in answer to
// each request on tools.discover; Stop publishes a goodbye.
//
// All messages of an Announcer are published under one lock, so they
// leave in Seq order and nothing follows the goodbye. Methods are safe for
// concurrent use.
type Announcer struct {
	nc       *nats.Conn
	tk       *toolkit.Toolkit
	cfg      AnnouncerConfig
	subject  string
	epoch    int64
	log      *slog.Logger
	changed  chan struct{}
	stopLoop chan struct{}
	loopDone chan struct{}
	unwatch  func()
	sub      *nats.Subscription

	mu      sync.Mutex // serialises publishing; guards seq and stopped
	seq     uint64
	stopped bool
}

// NewAnnouncer starts announcing tk on nc. It publishes the first
// announcement before returning and fails if that is impossible (for
// example an announcement larger than the server's max_payload).
func NewAnnouncer(nc *nats.Conn, tk *toolkit.Toolkit, cfg AnnouncerConfig) (*Announcer, error) {
	switch {
	case nc == nil:
		return nil, errors.New("bus: NewAnnouncer: nil connection")
	case tk == nil:
		return nil, errors.New("bus: NewAnnouncer: nil toolkit")
	case cfg.Interval < 0:
		return nil, fmt.Errorf("bus: NewAnnouncer: negative interval %v", cfg.Interval)
	case cfg.Interval > 0 && cfg.Interval < time.Millisecond:
		return nil, fmt.Errorf("bus: NewAnnouncer: interval %v is under the wire's 1 ms resolution", cfg.Interval)
	case cfg.Instance != "" && !toolkit.ValidName(cfg.Instance):
		return nil, fmt.Errorf("bus: NewAnnouncer: invalid instance id %q: must match [A-Za-z0-9_-]+ (one subject token)", cfg.Instance)
	}
	if cfg.Instance == "" {
		cfg.Instance = rand.Text()
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultAnnounceInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Announcer{
		nc:       nc,
		tk:       tk,
		cfg:      cfg,
		subject:  SubjectAnnounce + "." + cfg.Instance,
		epoch:    time.Now().UnixMilli(),
		log:      cfg.Logger.With("instance", cfg.Instance),
		changed:  make(chan struct{}, 1),
		stopLoop: make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	if err := a.announce(); err != nil {
		return nil, err
	}
	sub, err := nc.Subscribe(SubjectDiscover, a.answer)
	if err != nil {
		return nil, fmt.Errorf("bus: announcer %s: subscribing to %s: %w", cfg.Instance, SubjectDiscover, err)
	}
	a.sub = sub
	// The discover subscription is on the server once Flush returns: a
	// fleet started after NewAnnouncer (or bus.Serve) returns gets an
	// answer, not "no responders".
	if err := nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("bus: announcer %s: flushing the %s subscription: %w", cfg.Instance, SubjectDiscover, err)
	}
	a.unwatch = tk.OnChange(func() {
		select { // runs under the toolkit's lock: never block
		case a.changed <- struct{}{}:
		default:
		}
	})
	go a.loop()
	return a, nil
}

// Instance returns the announced instance id.
func (a *Announcer) Instance() string { return a.cfg.Instance }

// Announcement returns what the announcer would publish now (with the
// sequence number of its last message).
func (a *Announcer) Announcement() Announcement {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.build(a.seq)
}

// Stop stops announcing and publishes a goodbye, so fleets drop the
// instance at once. It is idempotent.
func (a *Announcer) Stop() error {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil
	}
	a.stopped = true
	a.seq++
	bye := Announcement{Format: AnnounceFormat, Instance: a.cfg.Instance, Version: a.cfg.Version, Queue: a.cfg.Queue,
		EpochMS: a.epoch, Seq: a.seq, IntervalMS: a.cfg.Interval.Milliseconds(), Goodbye: true,
		Groups: []AnnouncedGroup{}, Tools: []AnnouncedTool{}}
	err := a.publish(a.subject, bye, false)
	a.mu.Unlock()
	a.unwatch()
	uerr := a.sub.Unsubscribe()
	close(a.stopLoop)
	<-a.loopDone
	if err == nil {
		err = a.nc.Flush()
	}
	return errors.Join(ignoreClosed(err), ignoreClosed(uerr))
}

func (a *Announcer) loop() {
	defer close(a.loopDone)
	tick := time.NewTicker(a.cfg.Interval)
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
				a.log.Warn("bus: announcer stops: its connection is closed")
				return
			}
			a.log.Error("bus: announcing tools", "err", err)
		}
	}
}

// announce publishes the current announcement on tools.announce.<instance>.
func (a *Announcer) announce() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return nil
	}
	a.seq++
	return a.publish(a.subject, a.build(a.seq), false)
}

// answer replies to a discover request, in JSON when asked.
func (a *Announcer) answer(m *nats.Msg) {
	if m.Reply == "" {
		a.log.Warn("bus: discover request without a reply subject", "subject", m.Subject)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return
	}
	a.seq++
	asJSON := m.Header != nil && strings.HasPrefix(m.Header.Get(discoveryHeaderContentType), discoveryJSON)
	if err := a.publish(m.Reply, a.build(a.seq), asJSON); err != nil {
		a.log.Error("bus: answering a discover request", "err", err)
	}
}

// publish encodes and sends one announcement; a.mu is held.
func (a *Announcer) publish(subject string, ann Announcement, asJSON bool) error {
	msg := &nats.Msg{Subject: subject}
	var err error
	if asJSON {
		msg.Header = nats.Header{discoveryHeaderContentType: []string{discoveryJSON}}
		msg.Data, err = json.Marshal(ann)
	} else {
		msg.Data, err = msgpack.Marshal(ann)
	}
	if err != nil {
		return fmt.Errorf("bus: announcer %s: encoding: %w", ann.Instance, err)
	}
	if err := a.nc.PublishMsg(msg); err != nil {
		if errors.Is(err, nats.ErrMaxPayload) {
			return fmt.Errorf("bus: announcer %s: the announcement of %d tools is %d bytes, over the server's max_payload of %d: %w",
				ann.Instance, len(ann.Tools), len(msg.Data), a.nc.MaxPayload(), err)
		}
		return fmt.Errorf("bus: announcer %s: publishing on %s: %w", ann.Instance, subject, err)
	}
	return nil
}

// build snapshots the toolkit.
func (a *Announcer) build(seq uint64) Announcement {
	ann := Announcement{
		Format:     AnnounceFormat,
		Instance:   a.cfg.Instance,
		Version:    a.cfg.Version,
		Queue:      a.cfg.Queue,
		EpochMS:    a.epoch,
		Seq:        seq,
		IntervalMS: a.cfg.Interval.Milliseconds(),
		Groups:     []AnnouncedGroup{},
		Tools:      []AnnouncedTool{},
	}
	groups := map[string]bool{toolkit.BasicGroup: true}
	for _, g := range a.tk.Groups() {
		groups[g.Name] = true
		ann.Groups = append(ann.Groups, AnnouncedGroup{Name: g.Name, Description: g.Description, Instructions: g.Instructions, Active: g.Active})
	}
	for _, t := range a.tk.Tools() {
		group := t.Group
		if group == "" {
			group = toolkit.BasicGroup
		}
		s, ok := a.tk.Schema(t.Name)
		if !ok || !groups[group] {
			// Changed between the snapshots: the change's own
			// announcement follows.
			continue
		}
		ann.Tools = append(ann.Tools, AnnouncedTool{
			Name: t.Name, Description: t.Description, Group: group,
			ReadOnly: t.ReadOnly, ConcurrencySafe: t.ConcurrencySafe, Idempotency: t.Idempotency.String(),
			Parameters: s.Function.Parameters,
		})
	}
	if a.cfg.Skills != nil {
		ann.Skills = announcedSkills(a.cfg.Skills, groups)
	}
	ann.Permissions = a.cfg.Permissions
	return ann
}

// FleetConfig configures NewFleet. The zero value means the defaults.
type FleetConfig struct {
	// TTL drops an instance not heard from for that long. 0 means
	// DefaultFleetTTLFactor times the instance's announced interval.
	TTL time.Duration
	// DiscoverWindow is how long Discover (and NewFleet) collect answers;
	// 0 means DefaultDiscoverWindow.
	DiscoverWindow time.Duration
	// Logger receives malformed announcements; nil means slog.Default().
	Logger *slog.Logger
}

// FleetTool is a tool served by one or more instances.
type FleetTool struct {
	AnnouncedTool
	// Instances serving the tool, sorted.
	Instances []string
}

// Instance is a live worker instance as a Fleet knows it.
type Instance struct {
	ID       string
	Version  string
	Queue    string
	Groups   []string // non-basic groups, in the instance's order
	Tools    []string // in the instance's order
	Interval time.Duration
	LastSeen time.Time
	// Expires is when the instance is dropped unless heard from again.
	Expires time.Time
	// Permissions are the instance's permission defaults; nil when it
	// checks none.
	Permissions *AnnouncedPermissions
}

// Fleet is a client's live view of the tools the fleet serves, built from
// announcements: a new instance appears when its first announcement
// arrives, a stopped one disappears on its goodbye, and one that died
// without a goodbye disappears TTL after its last announcement (by default
// 3 announce intervals, 6 s with the default interval).
//
// Tools served by several instances are merged by name. Where instances
// disagree about a tool or group, the instance whose id sorts first wins.
//
// All methods are safe for concurrent use.
type Fleet struct {
	nc     *nats.Conn
	cfg    FleetConfig
	log    *slog.Logger
	sub    *nats.Subscription
	view   atomic.Pointer[fleetView]
	notify chan struct{}
	done   chan struct{}

	mu        sync.Mutex
	instances map[string]*fleetInstance
	gone      map[string]goodbyeMark
	watchers  map[int]func()
	nextW     int
	closed    bool
}

type fleetInstance struct {
	ann      Announcement
	lastSeen time.Time
	ttl      time.Duration
	timer    *time.Timer
}

// goodbyeMark remembers a goodbye so that older messages of the same
// instance arriving late do not bring it back.
type goodbyeMark struct {
	epoch int64
	seq   uint64
	until time.Time
}

// fleetView is an immutable merged snapshot.
type fleetView struct {
	tools     []FleetTool
	groups    []toolkit.Group
	instances []Instance
	mirror    *toolkit.Toolkit // the merged tools, for Schemas
	skills    []skill.Skill    // merged catalog, basic first, then in group order
}

// NewFleet subscribes to announcements and runs Discover once, so the
// returned Fleet already knows every instance that answered within the
// discover window.
func NewFleet(ctx context.Context, nc *nats.Conn, cfg FleetConfig) (*Fleet, error) {
	switch {
	case nc == nil:
		return nil, errors.New("bus: NewFleet: nil connection")
	case cfg.TTL < 0:
		return nil, fmt.Errorf("bus: NewFleet: negative TTL %v", cfg.TTL)
	case cfg.DiscoverWindow < 0:
		return nil, fmt.Errorf("bus: NewFleet: negative discover window %v", cfg.DiscoverWindow)
	}
	if cfg.DiscoverWindow == 0 {
		cfg.DiscoverWindow = DefaultDiscoverWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	f := &Fleet{
		nc:        nc,
		cfg:       cfg,
		log:       cfg.Logger,
		notify:    make(chan struct{}, 1),
		done:      make(chan struct{}),
		instances: map[string]*fleetInstance{},
		gone:      map[string]goodbyeMark{},
		watchers:  map[int]func(){},
	}
	f.view.Store(&fleetView{mirror: toolkit.New(&toolkit.Options{Logger: discardLogger})})
	sub, err := nc.Subscribe(SubjectAnnounce+".*", f.receive)
	if err != nil {
		return nil, fmt.Errorf("bus: fleet: subscribing to %s.*: %w", SubjectAnnounce, err)
	}
	f.sub = sub
	go f.notifier()
	if err := f.Discover(ctx); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Discover asks every live instance to announce itself and waits for the
// discover window (less when no instance is listening at all). Use it to
// refresh at once, for example after a reconnect.
func (f *Fleet) Discover(ctx context.Context) error {
	inbox := f.nc.NewInbox()
	none := make(chan struct{})
	var once sync.Once
	sub, err := f.nc.Subscribe(inbox, func(m *nats.Msg) {
		if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
			once.Do(func() { close(none) }) // no responders: nobody to wait for
			return
		}
		f.receive(m)
	})
	if err != nil {
		return fmt.Errorf("bus: fleet: discover: %w", err)
	}
	defer sub.Unsubscribe()
	if err := f.nc.PublishRequest(SubjectDiscover, inbox, nil); err != nil {
		return fmt.Errorf("bus: fleet: discover: %w", err)
	}
	t := time.NewTimer(f.cfg.DiscoverWindow)
	defer t.Stop()
	select {
	case <-t.C:
	case <-none:
	case <-ctx.Done():
		return fmt.Errorf("bus: fleet: discover: %w", context.Cause(ctx))
	}
	return nil
}

// Close stops listening. The view keeps its last state.
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
	return ignoreClosed(f.sub.Unsubscribe())
}

// Tools returns the merged tools: instances in id order, each one's tools
// in its registration order, the first occurrence of a name kept.
func (f *Fleet) Tools() []FleetTool {
	v := f.view.Load()
	out := make([]FleetTool, len(v.tools))
	for i, t := range v.tools {
		out[i] = cloneFleetTool(t)
	}
	return out
}

// Tool returns one merged tool.
func (f *Fleet) Tool(name string) (FleetTool, bool) {
	for _, t := range f.view.Load().tools {
		if t.Name == name {
			return cloneFleetTool(t), true
		}
	}
	return FleetTool{}, false
}

// Groups returns the merged non-basic groups, in the same order rule as
// Tools.
func (f *Fleet) Groups() []toolkit.Group { return slices.Clone(f.view.Load().groups) }

// Instances returns the live instances, sorted by id.
func (f *Fleet) Instances() []Instance {
	v := f.view.Load()
	out := make([]Instance, len(v.instances))
	for i, in := range v.instances {
		in.Groups = slices.Clone(in.Groups)
		in.Tools = slices.Clone(in.Tools)
		in.Permissions = in.Permissions.clone()
		out[i] = in
	}
	return out
}

// Schemas returns the fleet's schemas as toolkit.Toolkit.Schemas does for
// one toolkit: reset_tools first (when any non-basic group exists, with
// every group and whether it is active), then the basic tools and the
// active groups' tools, in the order of Tools.
func (f *Fleet) Schemas(active []string) []toolkit.FunctionSchema {
	return f.view.Load().mirror.Schemas(active)
}

// SessionSchemas returns Schemas for a session's active groups, read from
// state (at least minRevision); a session without stored state gets the
// groups announced as active by default.
func (f *Fleet) SessionSchemas(ctx context.Context, state toolkit.GroupState, session string, minRevision uint64) ([]toolkit.FunctionSchema, error) {
	v := f.view.Load()
	groups, _, ok, err := state.Load(ctx, session, minRevision)
	if err != nil {
		return nil, err
	}
	if !ok {
		groups = nil
		for _, g := range v.groups {
			if g.Active {
				groups = append(groups, g.Name)
			}
		}
	}
	return v.mirror.Schemas(groups), nil
}

// OnChange registers fn to run whenever the merged view changes (an
// instance appears or disappears, or announces different tools). Calls
// are made one at a time from one goroutine and coalesced: fn sees the
// latest view, not every step. It returns a function that unregisters fn.
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

// receive handles one announcement (broadcast or discover answer).
func (f *Fleet) receive(m *nats.Msg) {
	ann, err := decodeAnnouncement(m)
	if err != nil {
		f.log.Warn("bus: fleet: ignoring a malformed announcement", "subject", m.Subject, "err", err)
		return
	}
	if tok, ok := strings.CutPrefix(m.Subject, SubjectAnnounce+"."); ok && tok != ann.Instance {
		f.log.Warn("bus: fleet: ignoring an announcement on another instance's subject", "subject", m.Subject, "instance", ann.Instance)
		return
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	for id, g := range f.gone {
		if now.After(g.until) {
			delete(f.gone, id)
		}
	}
	if g, ok := f.gone[ann.Instance]; ok && !newer(ann.EpochMS, ann.Seq, g.epoch, g.seq) {
		return // from before the goodbye
	}
	cur := f.instances[ann.Instance]
	if cur != nil && !newer(ann.EpochMS, ann.Seq, cur.ann.EpochMS, cur.ann.Seq) {
		return // reordered: an older message
	}
	ttl := f.ttl(ann)
	if ann.Goodbye {
		f.gone[ann.Instance] = goodbyeMark{epoch: ann.EpochMS, seq: ann.Seq, until: now.Add(ttl)}
		if cur != nil {
			cur.timer.Stop()
			delete(f.instances, ann.Instance)
			f.rebuild()
		}
		return
	}
	changed := cur == nil || !sameTools(cur.ann, ann)
	if cur != nil {
		cur.timer.Stop()
	}
	in := &fleetInstance{ann: ann, lastSeen: now, ttl: ttl}
	epoch, seq := ann.EpochMS, ann.Seq
	in.timer = time.AfterFunc(ttl, func() { f.expire(ann.Instance, epoch, seq) })
	f.instances[ann.Instance] = in
	if changed {
		f.rebuild()
	} else {
		f.refreshTimes()
	}
}

// expire drops an instance whose TTL passed, unless it was heard from
// since the timer was set.
func (f *Fleet) expire(id string, epoch int64, seq uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.instances[id]
	if f.closed || in == nil || in.ann.EpochMS != epoch || in.ann.Seq != seq {
		return
	}
	f.log.Info("bus: fleet: instance expired", "instance", id, "last_seen", in.lastSeen, "ttl", in.ttl)
	delete(f.instances, id)
	f.rebuild()
}

func (f *Fleet) ttl(ann Announcement) time.Duration {
	if f.cfg.TTL > 0 {
		return f.cfg.TTL
	}
	iv := time.Duration(ann.IntervalMS) * time.Millisecond
	if iv <= 0 {
		iv = DefaultAnnounceInterval
	}
	return DefaultFleetTTLFactor * iv
}

// refreshTimes updates LastSeen/Expires without re-merging; f.mu is held.
func (f *Fleet) refreshTimes() {
	old := f.view.Load()
	v := *old
	v.instances = f.instanceList()
	f.view.Store(&v)
}

func (f *Fleet) instanceList() []Instance {
	ids := slices.Sorted(maps.Keys(f.instances))
	out := make([]Instance, 0, len(ids))
	for _, id := range ids {
		in := f.instances[id]
		x := Instance{ID: id, Version: in.ann.Version, Queue: in.ann.Queue,
			Interval: time.Duration(in.ann.IntervalMS) * time.Millisecond,
			LastSeen: in.lastSeen, Expires: in.lastSeen.Add(in.ttl), Permissions: in.ann.Permissions}
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
// notification; f.mu is held.
func (f *Fleet) rebuild() {
	v := &fleetView{instances: f.instanceList(), mirror: toolkit.New(&toolkit.Options{Logger: discardLogger})}
	groupAt := map[string]int{}
	toolAt := map[string]int{}
	for _, id := range slices.Sorted(maps.Keys(f.instances)) {
		ann := f.instances[id].ann
		for _, g := range ann.Groups {
			if _, dup := groupAt[g.Name]; dup {
				continue
			}
			if err := v.mirror.AddGroup(toolkit.Group{Name: g.Name, Description: g.Description, Instructions: g.Instructions, Active: g.Active}); err != nil {
				f.log.Warn("bus: fleet: ignoring an announced group", "instance", id, "group", g.Name, "err", err)
				continue
			}
			groupAt[g.Name] = len(v.groups)
			v.groups = append(v.groups, toolkit.Group{Name: g.Name, Description: g.Description, Instructions: g.Instructions, Active: g.Active})
		}
		for _, t := range ann.Tools {
			if i, dup := toolAt[t.Name]; dup {
				v.tools[i].Instances = append(v.tools[i].Instances, id)
				continue
			}
			var opts []toolkit.Option
			if t.Group != toolkit.BasicGroup {
				opts = append(opts, toolkit.InGroup(t.Group))
			}
			if err := v.mirror.Add(toolkit.Raw(t.Name, t.Description, t.Parameters, mirrorHandler), opts...); err != nil {
				f.log.Warn("bus: fleet: ignoring an announced tool", "instance", id, "tool", t.Name, "err", err)
				continue
			}
			toolAt[t.Name] = len(v.tools)
			v.tools = append(v.tools, FleetTool{AnnouncedTool: t, Instances: []string{id}})
		}
	}
	v.skills = f.mergeSkills(v.groups)
	f.view.Store(v)
	select {
	case f.notify <- struct{}{}:
	default:
	}
}

// mirrorHandler backs the tools of a Fleet's schema mirror, which exists
// only to compute Schemas and is never called.
func mirrorHandler(context.Context, *toolkit.Call, toolkit.Writer) error {
	return toolkit.NewError(toolkit.CodeInternal, "InternalError: fleet schema mirrors do not run tools")
}

// decodeAnnouncement decodes (JSON when the message says so, msgpack
// otherwise) and checks an announcement. Parameters are normalised to
// what encoding/json produces, whatever the encoding.
func decodeAnnouncement(m *nats.Msg) (Announcement, error) {
	var ann Announcement
	var err error
	if m.Header != nil && strings.HasPrefix(m.Header.Get(discoveryHeaderContentType), discoveryJSON) {
		err = json.Unmarshal(m.Data, &ann)
	} else {
		err = msgpack.Unmarshal(m.Data, &ann)
	}
	switch {
	case err != nil:
		return ann, fmt.Errorf("undecodable body of %d bytes: %w", len(m.Data), err)
	case ann.Format < 1:
		return ann, fmt.Errorf("missing or bad format version %d", ann.Format)
	case !toolkit.ValidName(ann.Instance):
		return ann, fmt.Errorf("invalid instance id %q", ann.Instance)
	case ann.IntervalMS < 0:
		return ann, fmt.Errorf("negative interval %d ms", ann.IntervalMS)
	}
	for i := range ann.Tools {
		t := &ann.Tools[i]
		if t.Group == "" {
			t.Group = toolkit.BasicGroup
		}
		b, err := json.Marshal(t.Parameters)
		if err != nil {
			return ann, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
		t.Parameters = nil
		if err := json.Unmarshal(b, &t.Parameters); err != nil {
			return ann, fmt.Errorf("tool %q: parameters: %w", t.Name, err)
		}
	}
	return ann, nil
}

// newer reports whether (e1, s1) comes after (e2, s2).
func newer(e1 int64, s1 uint64, e2 int64, s2 uint64) bool {
	return e1 > e2 || (e1 == e2 && s1 > s2)
}

func sameTools(a, b Announcement) bool {
	return a.Version == b.Version && a.Queue == b.Queue && a.IntervalMS == b.IntervalMS &&
		reflect.DeepEqual(a.Groups, b.Groups) && reflect.DeepEqual(a.Tools, b.Tools) &&
		reflect.DeepEqual(a.Skills, b.Skills) && reflect.DeepEqual(a.Permissions, b.Permissions)
}

func cloneFleetTool(t FleetTool) FleetTool {
	t.Instances = slices.Clone(t.Instances)
	if t.Parameters != nil {
		var p map[string]any
		b, _ := json.Marshal(t.Parameters)
		_ = json.Unmarshal(b, &p)
		t.Parameters = p
	}
	return t
}

func ignoreClosed(err error) error {
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrBadSubscription) {
		return nil
	}
	return err
}

var discardLogger = slog.New(slog.NewTextHandler(io.Discard, nil))
