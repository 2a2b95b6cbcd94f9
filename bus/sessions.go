package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// Session affinity (subjects.md: Session affinity). A session-bound tool
// (toolkit.SessionBound) keeps state on the worker that runs it, so a
// session's calls of such tools run on one worker: the session is pinned
// to it by a key in the sessions bucket (session key → instance id). The
// first such call claims the session for the worker that receives it;
// a worker that receives a call of a session pinned elsewhere passes it on
// to the pinned worker's own subject (wire.PinnedSubject), where the
// client sends the session's later calls directly (it learns the pin from
// the final's metadata). When the pinned worker is gone (it answers no
// probe), the worker that has the call takes the session over and the
// final says so: metadata session_moved_from, and a line of text.

// SessionsOptions turn session affinity on (WorkerOptions.Sessions).
type SessionsOptions struct {
	// JetStream is where the sessions bucket lives; required.
	JetStream jetstream.JetStream
	// TTL is how long a pin is kept after it was last renewed (the pinned
	// worker renews it as the session's calls go on), set when the bucket
	// is created. Default DefaultSessionTTL.
	TTL time.Duration
	// Replicas of the bucket when this worker creates it. Default 1.
	Replicas int
	// ProbeTimeout bounds the wait for a pinned worker's answer to a
	// probe; one that does not answer in time (frozen, cut off) is taken
	// for gone. Default 1s.
	ProbeTimeout time.Duration
}

// SessionsBucketConfig is the sessions bucket as whoever creates it first
// creates it.
func SessionsBucketConfig(ttl time.Duration, replicas int) jetstream.KeyValueConfig {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return jetstream.KeyValueConfig{Bucket: wire.BucketSessions, Description: "toolbus: the worker each session's session-bound tools run on",
		History: 1, TTL: ttl, Replicas: max(replicas, 1)}
}

// affinity is a worker's side of session affinity.
type affinity struct {
	w     *Worker
	kv    jetstream.KeyValue
	ttl   time.Duration
	probe time.Duration
	subs  [2]*nats.Subscription // the probe, and calls to this instance

	mu    sync.Mutex
	owned map[string]time.Time // session key → when its pin was last written here
}

// maxOwned bounds the sessions a worker remembers pinning; past it the
// memory is cleared and the bucket read again.
const maxOwned = 100_000

func startAffinity(ctx context.Context, w *Worker, o *SessionsOptions) (*affinity, error) {
	if o.JetStream == nil {
		return nil, errors.New("bus: SessionsOptions.JetStream is required")
	}
	if !toolkit.ValidName(w.opts.Instance) {
		return nil, fmt.Errorf("bus: session affinity needs an instance id of [A-Za-z0-9_-], not %q", w.opts.Instance)
	}
	cfg := SessionsBucketConfig(o.TTL, o.Replicas)
	b, err := kv.Open(ctx, o.JetStream, cfg)
	if err != nil {
		return nil, fmt.Errorf("bus: the sessions bucket: %w", err)
	}
	a := &affinity{w: w, kv: b, ttl: cfg.TTL, probe: o.ProbeTimeout, owned: map[string]time.Time{}}
	if a.probe <= 0 {
		a.probe = time.Second
	}
	me := wire.SubjectPinnedPrefix + w.opts.Instance
	if a.subs[0], err = w.nc.Subscribe(me, func(m *nats.Msg) { m.Respond(nil) }); err != nil {
		return nil, fmt.Errorf("bus: subscribing to %s: %w", me, err)
	}
	if a.subs[1], err = w.nc.ChanSubscribe(me+".>", w.inbox); err != nil {
		a.subs[0].Unsubscribe()
		return nil, fmt.Errorf("bus: subscribing to %s.>: %w", me, err)
	}
	return a, nil
}

// pin is where a session-bound call runs.
type pin struct {
	forwarded bool   // passed on to the pinned worker: nothing to answer here
	here      bool   // the session is pinned here: the final names this worker
	movedFrom string // the session was pinned to this instance, which is gone
}

// route decides where the session-bound call in runs, forwarding it when
// the session is pinned to another live worker. Trouble with the bucket
// runs the call here, unpinned, and is logged.
func (a *affinity) route(in *incoming, scope string) pin {
	key, err := wire.SessionKey(scope)
	if err != nil {
		return pin{}
	}
	me := a.w.opts.Instance
	now := time.Now()
	a.mu.Lock()
	last, ok := a.owned[key]
	a.mu.Unlock()
	if ok && now.Sub(last) < a.ttl/2 {
		return pin{here: true}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lost := in.header.Get(wire.HeaderPinLost)
	forwarded := in.header.Get(wire.HeaderForwarded) != ""
	for range 3 {
		e, err := a.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if _, err = a.kv.Create(ctx, key, []byte(me)); err == nil {
				a.own(key, now)
				return pin{here: true}
			}
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue // claimed meanwhile: see by whom
			}
		}
		if err != nil {
			a.w.count.jsErrors.Add(1)
			a.w.log.Warn("bus: reading a session's pin; running the call here", "session", scope, "err", err)
			return pin{}
		}
		owner := string(e.Value())
		if owner == me {
			if ok { // renew it: it expires ttl after its last write
				if _, err := a.kv.Put(ctx, key, []byte(me)); err != nil {
					a.w.count.jsErrors.Add(1)
					a.w.log.Warn("bus: renewing a session's pin", "session", scope, "err", err)
				}
			}
			a.own(key, now)
			return pin{here: true}
		}
		if lost != owner && a.isAlive(owner) {
			if forwarded {
				// Pinned elsewhere after the worker that passed it on
				// looked: run it rather than pass it around.
				a.w.log.Warn("bus: a forwarded call's session is pinned to another worker; running it here", "session", scope, "pinned", owner)
				return pin{}
			}
			a.forward(in, owner)
			return pin{forwarded: true}
		}
		if _, err = a.kv.Update(ctx, key, []byte(me), e.Revision()); err == nil {
			a.own(key, now)
			a.w.log.Info("bus: took over a session whose worker is gone", "session", scope, "from", owner)
			return pin{here: true, movedFrom: owner}
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			a.w.count.jsErrors.Add(1)
			a.w.log.Warn("bus: re-pinning a session; running the call here", "session", scope, "err", err)
			return pin{}
		}
	}
	return pin{}
}

func (a *affinity) own(key string, at time.Time) {
	a.mu.Lock()
	if len(a.owned) >= maxOwned {
		clear(a.owned)
	}
	a.owned[key] = at
	a.mu.Unlock()
}

// isAlive probes instance: it answers while it lives and serves. Every
// pass-on probes first (one round trip), so a call is not sent to a
// worker that has just gone.
func (a *affinity) isAlive(instance string) bool {
	_, err := a.w.nc.Request(wire.SubjectPinnedPrefix+instance, nil, a.probe)
	return err == nil
}

// forward passes the call on to the pinned worker, which answers the
// caller directly.
func (a *affinity) forward(in *incoming, owner string) {
	h := nats.Header{}
	for k, v := range in.header {
		h[k] = v
	}
	h.Set(wire.HeaderForwarded, a.w.opts.Instance)
	m := &nats.Msg{Subject: wire.PinnedSubject(owner, in.tool, in.identity), Reply: in.reply, Header: h, Data: in.data}
	if err := a.w.nc.PublishMsg(m); err != nil {
		a.w.log.Warn("bus: passing a call on to its session's worker", "worker", owner, "err", err)
	}
}

// stop ends the worker's own subscriptions (its pins stay: the next call
// of each session finds the worker gone and moves the session).
func (a *affinity) stop() {
	for _, s := range a.subs {
		if s != nil {
			s.Unsubscribe()
		}
	}
}

// movedText is the line a final gets when its call moved the session.
func movedText(from, to string) string {
	return fmt.Sprintf("[toolbus] This session's stateful tools moved from worker %s, which is gone, to worker %s: files and other state from earlier calls may be missing.", from, to)
}

// SessionPin is one session pinned to a worker (Client.Sessions).
type SessionPin struct {
	Identity string    // the caller identity; "" for anonymous sessions
	Session  string    // "" is the default session
	Worker   string    // the instance its session-bound tools run on
	Since    time.Time // when the pin was last written (claimed or renewed)
	Groups   []string  // the session's active groups
}

// Sessions lists the sessions pinned to workers, oldest pin first; none
// when the fleet has no sessions bucket.
func (c *Client) Sessions(ctx context.Context) ([]SessionPin, error) {
	js, err := c.jetStream()
	if err != nil {
		return nil, err
	}
	b, err := kv.Bind(ctx, js, wire.BucketSessions)
	if err != nil || b == nil {
		return nil, err
	}
	keys, err := b.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: listing sessions: %w", err)
	}
	f, state, err := c.discovery(ctx)
	if err != nil {
		return nil, err
	}
	var pins []SessionPin
	for key := range keys.Keys() {
		scope, err := wire.ParseSessionKey(key)
		if err != nil {
			continue
		}
		e, err := b.Get(ctx, key)
		if err != nil {
			continue // expired or deleted meanwhile
		}
		identity, session := toolkit.SplitScope(scope)
		p := SessionPin{Identity: identity, Session: session, Worker: string(e.Value()), Since: e.Created()}
		if p.Groups, _, err = toolkit.LoadActive(ctx, state, f.Groups(), scope, 0); err != nil {
			return nil, fmt.Errorf("bus: reading the groups of session %q: %w", session, err)
		}
		pins = append(pins, p)
	}
	slices.SortFunc(pins, func(a, b SessionPin) int { return a.Since.Compare(b.Since) })
	return pins, nil
}
