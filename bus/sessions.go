package bus

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
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
// final says so: metadata session_moved_from, and a line of text. What a
// worker remembers of the sessions it holds is bounded by count and by
// the bytes of their keys (maxOwned, maxOwnedBytes), whatever names its
// callers invent.

// SessionsOptions turn session affinity on (WorkerOptions.Sessions).
type SessionsOptions struct {
	// JetStream is where the sessions bucket lives; required.
	JetStream jetstream.JetStream
	// TTL is how long a pin is kept after it was last renewed (the pinned
	// worker renews it as the session's calls go on), set when the bucket
	// is created. Default DefaultSessionTTL. Pins are renewed on the TTL
	// of the bucket, which is this one only when this worker created it.
	TTL time.Duration
	// Replicas of the bucket when this worker creates it. Default 1.
	Replicas int
	// MaxSessions bounds the sessions the bucket pins when this worker
	// creates it (kv.OpenBounded); past it a new session is served
	// without a pin, on the worker that has its call, until pins expire.
	// 0 means DefaultMaxStoredSessions; negative no bound.
	MaxSessions int64
	// ProbeTimeout bounds the wait for a pinned worker's answer to a
	// probe; one that does not answer in time (frozen, cut off) is taken
	// for gone. Default 1s. Give every worker of a fleet the same: a
	// worker serves a session it found pinned to itself for half its own
	// probe timeout without reading the pin again, which is safe only
	// while no other worker takes a session over after a shorter silence.
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
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	cfg   jetstream.KeyValueConfig // the bucket as this worker makes it (remake)
	max   int64                    // its bound, with cfg
	ttl   atomic.Int64             // the bucket's TTL: pinTTL
	probe time.Duration
	subs  [2]*nats.Subscription // the probe, and calls to this instance

	remaking sync.Mutex // one remake at a time: the others find it made

	mu    sync.Mutex
	owned map[string]held     // session key → when this worker last read or wrote its pin as its own
	wrote map[string]pinWrite // session key → this worker's last write of its pin (age)
	// ownedBytes and wroteBytes are the bytes of owned's and wrote's
	// keys (maxOwnedBytes).
	ownedBytes, wroteBytes int
	// expected are the calls other workers probed this one for, by
	// their reply subjects (one a caller may share between calls: how
	// many, and when last): each passes its call on next, and a stop
	// waits for them (awaitForwards). blind is when a probe
	// that named no call it could be waited for by (empty: a worker of
	// an earlier build; or past the bounds) was last answered; stopped, that the probe subscription is gone: no probe
	// is answered after it.
	// pruned is when expected was last scanned for stale calls, past
	// its bound (scans counts them, for tests).
	expected map[string]probeNote
	blind    time.Time
	stopped  bool
	pruned   time.Time
	scans    int

	// run is where this worker's run began in the bucket's stream: a pin
	// naming this instance at or before it was written by an earlier run
	// under the same id (earlier).
	run atomic.Pointer[runStart]

	now           func() time.Time // the worker's clock (tests: one off the server's)
	afterRead     func()           // tests: after route read a pin
	afterForward  func()           // tests: after forward passed a call on
	beforeForward func()           // tests: before forward passes a call on
}

// runStart is the sessions stream as a worker found it when it started:
// the stream's creation (a bucket made again is another stream) and its
// last sequence then.
type runStart struct {
	created time.Time
	seq     uint64
}

// held is a pin this worker read or wrote as its own, and when; or,
// with gaveUp, when it gave the session up (forget).
type held struct {
	at         time.Time
	reconnects uint64 // the connection's reconnects then
	gaveUp     bool
}

// pinWrite is a write of a session's pin by this worker: its revision,
// and when it began on the worker's clock.
type pinWrite struct {
	rev uint64
	at  time.Time
}

// maxOwned bounds the sessions a worker remembers holding (and the
// writes of their pins); past it the memory is cleared and the bucket
// read again. maxOwnedBytes bounds the bytes of their keys likewise, in
// each of the two memories: a key may be up to wire.MaxSessionKeyLen
// bytes, and callers name sessions at will, so 100,000 of them could be
// 100 MiB. Past either bound the memory is cleared: each session held is
// served after a read of its pin (as past the trust), and a pin whose
// write is forgotten is renewed at its session's next call (age).
const (
	maxOwned      = 100_000
	maxOwnedBytes = 16 << 20
)

// hold notes that this worker holds the session of key (owned). a.mu is
// held.
func (a *affinity) hold(key string, h held) { remember(a.owned, &a.ownedBytes, key, h) }

// noteWrite notes this worker's write of the pin of key (wrote). a.mu is
// held.
func (a *affinity) noteWrite(key string, pw pinWrite) { remember(a.wrote, &a.wroteBytes, key, pw) }

// remember puts v under key in m, whose keys take *bytes, clearing m
// first when a key not already in it would take it past maxOwned keys or
// maxOwnedBytes: a key already held costs nothing.
func remember[V any](m map[string]V, bytes *int, key string, v V) {
	if _, ok := m[key]; !ok {
		if len(m) >= maxOwned || *bytes+len(key) > maxOwnedBytes {
			clear(m)
			*bytes = 0
		}
		*bytes += len(key)
	}
	m[key] = v
}

// trust is how long a worker serves a session it found pinned to itself
// without reading the pin again: less than the probe timeout. Another
// worker takes the session over only after this one failed to answer a
// probe for that long, which a frozen or cut-off worker cannot have
// read through; a reconnect since (a client may have found it gone)
// ends the trust too, and so does a stop (no probe is answered after
// it).
func (a *affinity) trust() time.Duration { return min(a.pinTTL()/2, a.probe/2) }

// pinTTL is the TTL pins expire by, and are renewed on: the bucket's,
// which the worker that made it chose (it may be made again: remake).
func (a *affinity) pinTTL() time.Duration { return time.Duration(a.ttl.Load()) }

func startAffinity(ctx context.Context, w *Worker, o *SessionsOptions) (*affinity, error) {
	if o.JetStream == nil {
		return nil, errors.New("bus: SessionsOptions.JetStream is required")
	}
	if !toolkit.ValidName(w.opts.Instance) {
		return nil, fmt.Errorf("bus: session affinity needs an instance id of [A-Za-z0-9_-], not %q", w.opts.Instance)
	}
	cfg, max := SessionsBucketConfig(o.TTL, o.Replicas), MaxSessionsFor(o.MaxSessions)
	b, err := kv.OpenBounded(ctx, o.JetStream, cfg, max)
	if err != nil {
		return nil, fmt.Errorf("bus: the sessions bucket: %w", err)
	}
	a := &affinity{w: w, js: o.JetStream, kv: b, cfg: cfg, max: max, probe: o.ProbeTimeout, owned: map[string]held{}, wrote: map[string]pinWrite{}, now: time.Now}
	a.ttl.Store(int64(cfg.TTL))
	info, err := a.adoptTTL(ctx)
	if err != nil {
		return nil, fmt.Errorf("bus: the sessions bucket: %w", err)
	}
	if info != nil {
		a.run.Store(&runStart{created: info.Created, seq: info.State.LastSeq})
	}
	if a.probe <= 0 {
		a.probe = time.Second
	}
	me := wire.SubjectPinnedPrefix + w.opts.Instance
	if a.subs[0], err = w.nc.Subscribe(me, a.probed); err != nil {
		return nil, fmt.Errorf("bus: subscribing to %s: %w", me, err)
	}
	if a.subs[1], err = w.nc.ChanSubscribe(me+".>", w.inbox); err != nil {
		a.subs[0].Unsubscribe()
		return nil, fmt.Errorf("bus: subscribing to %s.>: %w", me, err)
	}
	w.drops.watch(DroppedProbes, a.subs[0])
	w.drops.watch(DroppedCalls, a.subs[1])
	return a, nil
}

// pin is where a session-bound call runs here.
type pin struct {
	here      bool   // the session is pinned here: the final names this worker
	movedFrom string // the session was pinned to this instance, which is gone
	// unknownFrom: the session's pin was a server's answer stored under
	// its key (kv.ErrForged), which names no worker; this worker took the
	// session over, and the state of its earlier calls may be elsewhere.
	unknownFrom bool
	// full: the session's worker (movedFrom) is gone, and the sessions
	// bucket is full, so the call runs here without a pin (a replicated
	// bucket at its bound refuses the take-over too): the final says so,
	// without session_worker.
	full bool
	// lacked: the session's worker (movedFrom) lives, but does not serve
	// the call's tool (it passed the call on, Toolbus-Unserved, and
	// answers a probe): a fleet whose workers serve different
	// session-bound tools. The final says so, not that it is gone.
	lacked bool
}

// detour is why a session-bound call neither runs here nor is passed on
// (route): it is answered unavailable. Not kept in the sender, whose
// size every call allocates.
type detour struct {
	// elsewhere: a call passed on here (Toolbus-Forwarded) whose session
	// is pinned to this other live worker now (it moved after the
	// passing worker looked). It does not run here, apart from the
	// session's state, and is not passed on again.
	elsewhere string
	// unkeyed: the session cannot be pinned (wire.SessionKey's error:
	// its key is over the bucket's bound).
	unkeyed error
}

// moved reports whether the call moved its session here: the final says so.
func (p pin) moved() bool { return p.movedFrom != "" || p.unknownFrom }

// route decides where the session-bound call in runs: here (its pin), or
// passed on to the live worker the session is pinned to (forwardTo). The
// pin is read unless this worker found it its own a moment ago (trust): a
// longer memory of holding it would outlive a take-over while the worker
// was frozen or cut off. Trouble with the bucket runs the call here,
// unpinned, and is logged.
func (a *affinity) route(in *incoming, scope string) (p pin, forwardTo string, d detour) {
	key, err := wire.SessionKey(scope)
	if err != nil {
		return pin{}, "", detour{unkeyed: err}
	}
	me := a.w.opts.Instance
	reconnects := a.w.nc.Stats().Reconnects
	a.mu.Lock()
	h, ok := a.owned[key]
	// A stopping worker answers no probe: another takes its sessions
	// over at once (no responders), so its memory of holding one proves
	// nothing, and the pin is read.
	stopping := a.stopped
	a.mu.Unlock()
	if ok && !stopping && !h.gaveUp && h.reconnects == reconnects && time.Since(h.at) < a.trust() {
		return pin{here: true}, "", detour{}
	}
	// mine notes the session held here as of at: by a write of the pin
	// (claimed, taken over), or by a read finding it this worker's.
	mine := func(at time.Time, wrote bool) pin {
		a.mu.Lock()
		// A read made before this worker gave the session up (a call of
		// it passed on with Toolbus-Pin-Lost meanwhile) runs its call
		// here, but is no ground to hold the session on; nor is one made
		// after, which finds the pin this worker's only because the
		// worker the call went to has not taken the session over yet
		// (without a probe: Toolbus-Pin-Lost). Only a write of the pin
		// since, its own, is.
		if h, ok := a.owned[key]; !ok || !h.gaveUp || wrote && h.at.Before(at) {
			a.hold(key, held{at: at, reconnects: reconnects})
		}
		a.mu.Unlock()
		return pin{here: true}
	}
	route, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// lost is the worker the call's client found gone (Toolbus-Pin-Lost),
	// whose pin is taken over without a probe. A compare-and-set of the
	// pin that lost, whichever it was (a claim, a renewal, a take-over),
	// lost to a write since the pin was read: by that worker perhaps (it
	// renewed its pin, or took the session over), which then lives. The
	// header is older news than that write, so it is dropped, and the pin
	// read next is probed, whoever it names.
	lost := in.header.Get(wire.HeaderPinLost)
	forwarded := in.header.Get(wire.HeaderForwarded) != ""
	var tried uint64 // the revision a lost compare-and-set was made on
	again := false   // whether a missing bucket was made again (remake)
	// An attempt is bounded by pinTry: the bucket's leader stepping down
	// drops the answer to a request on its way. Unanswered, it is made
	// again, from a read: a write may have been stored (taking: what the
	// final says of a take-over whose write went unanswered).
	var taking pin
	var tookAt time.Time // the start of the attempt whose take-over went unanswered
	unanswered := func(err error) bool { return route.Err() == nil && errors.Is(err, context.DeadlineExceeded) }
	for range 5 {
		ctx, cancel := context.WithTimeout(route, pinTry)
		defer cancel()
		start := time.Now() // the pin read is at least this fresh
		e, err := a.read(ctx, key, tried)
		if a.afterRead != nil {
			a.afterRead()
		}
		if unanswered(err) {
			tried = 0
			continue
		}
		if errors.Is(err, kv.ErrForged) {
			// Not a worker's name (NATS does not check reply subjects:
			// any caller can have the server store an answer of its own
			// under the key), so neither passed on nor probed: taken
			// over on its revision, the final saying where the session
			// runs now.
			a.w.log.Warn("bus: a session's pin was not written by toolbus (a server's answer stored under its key); taking the session over", "session", scope, "err", err)
			if err = a.pinHere(ctx, key, e.Revision); err == nil {
				p := mine(start, true)
				p.unknownFrom = true
				return p, "", detour{}
			}
			if unanswered(err) {
				tried, taking, tookAt = 0, pin{unknownFrom: true}, start
				continue
			}
			if lostRace(err) {
				tried, lost = e.Revision, "" // see lost
				continue
			}
			a.w.count.jsErrors.Add(1)
			a.w.log.Warn("bus: re-pinning a session; running the call here", "session", scope, "err", err)
			return pin{}, "", detour{}
		}
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if err = a.pinHere(ctx, key, 0); err == nil {
				return mine(start, true), "", detour{}
			}
			if unanswered(err) {
				tried = 0
				continue
			}
			if lostRace(err) {
				// Claimed meanwhile: see by whom (see lost).
				tried, lost = afterNone, ""
				continue
			}
			if kv.Full(err) {
				a.w.count.jsErrors.Add(1)
				a.w.log.Warn("bus: the sessions bucket is full (SessionsOptions.MaxSessions): a new session runs unpinned until pins expire", "session", scope, "bucket", a.cfg.Bucket, "err", err)
				return pin{}, "", detour{}
			}
		}
		if err != nil && !again && a.remake(route, err) {
			again, tried = true, 0
			continue // its pins went with it: claim the session again
		}
		if err != nil {
			a.w.count.jsErrors.Add(1)
			a.w.log.Warn("bus: reading a session's pin; running the call here", "session", scope, "err", err)
			return pin{}, "", detour{}
		}
		owner := string(e.Value)
		if owner == me && a.earlier(ctx, e.Revision) {
			// Pinned to this id by an earlier run, whose state is gone
			// with it: taken over on its revision, the final saying so.
			if err = a.pinHere(ctx, key, e.Revision); err == nil {
				a.w.log.Info("bus: took over a session pinned to this worker's earlier run", "session", scope)
				p := mine(start, true)
				p.movedFrom = me
				return p, "", detour{}
			}
			if unanswered(err) {
				tried, taking, tookAt = 0, pin{movedFrom: me}, start
				continue
			}
			if lostRace(err) {
				tried, lost = e.Revision, "" // see lost
				continue
			}
			a.w.count.jsErrors.Add(1)
			a.w.log.Warn("bus: re-pinning a session of this worker's earlier run; running the call here", "session", scope, "err", err)
			if kv.Full(err) { // as for a gone worker's, below
				return pin{movedFrom: me, full: true}, "", detour{}
			}
			return pin{}, "", detour{}
		}
		if owner == me {
			// Renewed once half its TTL has passed: it expires TTL after
			// its last write. Its age is judged on this worker's clock
			// alone (age), not by the server's stamp of the pin, which
			// a worker's clock off by half the TTL (a VM's, by a
			// minute) would judge never due, or always.
			if a.age(key, e.Revision) >= a.pinTTL()/2 {
				if err := a.pinHere(ctx, key, e.Revision); lostRace(err) {
					tried, lost = e.Revision, "" // taken over meanwhile (see lost)
					continue
				} else if err != nil {
					a.w.count.jsErrors.Add(1)
					a.w.log.Warn("bus: renewing a session's pin", "session", scope, "err", err)
				}
			}
			if taking.moved() {
				// A take-over of its own, stored unanswered, is a write,
				// made no later than then: a give-up since outlasts it.
				start = tookAt
			}
			p := mine(start, taking.moved())
			p.movedFrom, p.unknownFrom, p.lacked = taking.movedFrom, taking.unknownFrom, taking.lacked
			return p, "", detour{}
		}
		// A forwarded call is passed on no further: its probe names no
		// call, for which the owner's stop would wait in vain.
		named := in.reply
		if forwarded {
			named = probeNoCall
		}
		if lost != owner && a.isAlive(owner, named) {
			if forwarded {
				// Pinned elsewhere after the worker that passed it on
				// looked: neither run here, where the session's state is
				// not, nor passed around.
				a.w.log.Warn("bus: a forwarded call's session is pinned to another worker now; answering it unavailable", "session", scope, "pinned", owner)
				return pin{}, "", detour{elsewhere: owner}
			}
			return pin{}, owner, detour{}
		}
		// A call the session's worker passed on, as it does not serve the
		// tool (Toolbus-Unserved), or is stopping (then it answers no
		// probe): whether it lives is only for the final's word, not to
		// send the call back.
		lacked := lost == owner && in.header.Get(wire.HeaderUnserved) == owner && a.isAlive(owner, probeNoCall)
		// After the probe, which may have waited its whole timeout.
		ctx, cancel = context.WithTimeout(route, pinTry)
		defer cancel()
		if err = a.pinHere(ctx, key, e.Revision); err == nil {
			if lacked {
				a.w.log.Info("bus: took over a session whose worker does not serve the call's tool", "session", scope, "from", owner, "tool", in.tool)
			} else {
				a.w.log.Info("bus: took over a session whose worker is gone", "session", scope, "from", owner)
			}
			p := mine(start, true)
			p.movedFrom, p.lacked = owner, lacked
			return p, "", detour{}
		}
		if unanswered(err) {
			tried, taking, tookAt = 0, pin{movedFrom: owner, lacked: lacked}, start
			continue
		}
		if !lostRace(err) && !again && a.remake(route, err) {
			again, tried = true, 0
			continue
		}
		if kv.Full(err) {
			// A replicated stream at its bound refuses the rewrite of a
			// key it holds too. Nothing can be pinned until pins
			// expire; the state this session had went with its worker
			// all the same, and the final says so.
			a.w.count.jsErrors.Add(1)
			a.w.log.Warn("bus: the sessions bucket is full (SessionsOptions.MaxSessions): a session whose worker is gone runs unpinned until pins expire", "session", scope, "from", owner, "bucket", a.cfg.Bucket, "err", err)
			return pin{movedFrom: owner, full: true, lacked: lacked}, "", detour{}
		}
		if !lostRace(err) {
			a.w.count.jsErrors.Add(1)
			a.w.log.Warn("bus: re-pinning a session; running the call here", "session", scope, "err", err)
			return pin{}, "", detour{}
		}
		// The pin was written since it was read (see lost).
		tried, lost = e.Revision, ""
	}
	a.w.log.Warn("bus: a session's pin kept changing; running the call here", "session", scope)
	return pin{}, "", detour{}
}

// pinHere writes the pin of key naming this worker, on revision rev (0:
// creates it, as none), and notes the write for age.
func (a *affinity) pinHere(ctx context.Context, key string, rev uint64) error {
	at := a.now() // the write is stored no sooner
	var n uint64
	var err error
	if rev == 0 {
		n, err = a.kv.Create(ctx, key, []byte(a.w.opts.Instance))
	} else {
		n, err = a.kv.Update(ctx, key, []byte(a.w.opts.Instance), rev)
	}
	if err == nil {
		a.mu.Lock()
		a.noteWrite(key, pinWrite{rev: n, at: at})
		a.mu.Unlock()
	}
	return err
}

// age is how old the pin of key at revision rev is at most: the time
// since this worker began writing it, on the worker's own clock. Its
// server's stamp (the entry's Created) is compared with nothing here:
// the worker's clock may be off the server's by minutes. A pin of this
// worker whose write it does not know (its answer lost, the memory
// cleared past maxOwned or maxOwnedBytes) is taken for a TTL old: it is renewed.
func (a *affinity) age(key string, rev uint64) time.Duration {
	a.mu.Lock()
	w, ok := a.wrote[key]
	a.mu.Unlock()
	if !ok || w.rev != rev {
		return a.pinTTL()
	}
	return a.now().Sub(w.at)
}

// pinTry bounds one attempt of route at reading or writing a pin.
const pinTry = time.Second

// forget ends this worker's memory of holding the session of scope
// (trust): it gave the session up by passing a call of it on with
// Toolbus-Pin-Lost naming itself, which the receiving worker takes over
// without a probe. Holding on to it, this worker would go on running the
// session's calls beside the worker that took it, each with its own
// state, and neither final would say so.
func (a *affinity) forget(scope string) {
	key, err := wire.SessionKey(scope)
	if err != nil {
		return
	}
	a.mu.Lock()
	// Kept as when it was given up, so that a read of the pin made
	// before (another call of the session routed meanwhile) does not
	// hold it again.
	a.hold(key, held{at: time.Now(), gaveUp: true})
	a.mu.Unlock()
}

// keep renews the pin of a session while a call of it runs here, every
// quarter of the TTL, so that a call longer than what is left of the
// pin's TTL does not lose it: the session's next call reaching another
// worker would claim it there, apart from the state the running call
// keeps here, and nothing would say it moved. It stops when the pin names
// another worker (taken over) and when stop is called (the call ended;
// a renewal under way finishes on its own, bounded by its timeout).
func (a *affinity) keep(scope string) (stop func()) {
	key, err := wire.SessionKey(scope)
	if err != nil {
		return func() {}
	}
	k := &keeper{a: a, key: key, scope: scope}
	k.mu.Lock()
	k.t = time.AfterFunc(a.pinTTL()/4, k.renew)
	k.mu.Unlock()
	return k.stop
}

// keeper is one running call's renewal of its session's pin.
type keeper struct {
	a     *affinity
	key   string
	scope string

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func (k *keeper) renew() {
	a, me := k.a, k.a.w.opts.Instance
	renewal, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	for remade := false; ; {
		// An attempt is bounded by pinTry, as route's: the bucket's
		// leader stepping down drops the answer to a request on its
		// way, which waited for past a short TTL lets the pin expire
		// under the running call. Unanswered, it is made again from a
		// read: a write may have been stored.
		ctx, cancel := context.WithTimeout(renewal, pinTry)
		defer cancel()
		var e kv.Entry
		e, err = readPin(kv.Get(ctx, a.js, a.kv.Bucket(), k.key))
		switch {
		case errors.Is(err, kv.ErrForged):
			// A server's answer stored over this worker's pin: written
			// again on its revision.
			a.w.log.Warn("bus: a session's pin was not written by toolbus (a server's answer stored under its key); pinning its running call's session again", "session", k.scope, "err", err)
			err = a.pinHere(ctx, k.key, e.Revision)
		case err == nil && e.Found && string(e.Value) != me:
			return // taken over: the session is another worker's now
		case err == nil && e.Found:
			err = a.pinHere(ctx, k.key, e.Revision)
		case err == nil: // expired before this renewal
			err = a.pinHere(ctx, k.key, 0)
		}
		if err == nil || lostRace(err) {
			break
		}
		if renewal.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if !remade && a.remake(renewal, err) {
			remade = true
			continue
		}
		if kv.Transient(err) && kv.Sleep(renewal, 50*time.Millisecond) == nil {
			continue // no leader for the moment: an election
		}
		break
	}
	if err != nil && !lostRace(err) { // a lost race is read again next time
		a.w.count.jsErrors.Add(1)
		a.w.log.Warn("bus: renewing the pin of a session whose call runs", "session", k.scope, "err", err)
	}
	k.mu.Lock()
	if !k.stopped {
		k.t.Reset(a.pinTTL() / 4)
	}
	k.mu.Unlock()
}

func (k *keeper) stop() {
	k.mu.Lock()
	k.stopped = true
	k.t.Stop()
	k.mu.Unlock()
}

// remake makes the sessions bucket again, as startAffinity made it, when
// err (from a request to it) came from its being gone: deleted under the
// running fleet (nats kv rm, a JetStream reset). A worker that went on
// without it would run every session's calls unpinned until restarted.
// Its pins went with it, so each session is claimed again by its next
// call. Workers making it at once all end up bound to the one made
// (kv.Open); the bound handle names the bucket, so it serves the new one.
//
// remake reports whether to try the request again: the bucket is there
// again, or the error came from a moment without a stream leader that
// may be over (no responders), or from another worker making the bucket
// again since the request failed, which look the same. Its caller tries
// again once.
func (a *affinity) remake(ctx context.Context, err error) bool {
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return false
	}
	a.remaking.Lock()
	defer a.remaking.Unlock()
	if !kv.Gone(ctx, a.js, a.cfg.Bucket, err) {
		return true
	}
	if _, err := kv.OpenBounded(ctx, a.js, a.cfg, a.max); err != nil {
		a.w.count.jsErrors.Add(1)
		a.w.log.Warn("bus: making the deleted sessions bucket again", "err", err)
		return false
	}
	if _, err := a.adoptTTL(ctx); err != nil {
		a.w.log.Warn("bus: reading the TTL of the sessions bucket made again", "err", err)
	}
	a.w.log.Info("bus: the sessions bucket was deleted and is made again; each session is pinned again by its next call")
	return true
}

// adoptTTL renews pins on the TTL they expire by: the bucket's, which
// the worker that made it chose. It returns the bucket's stream as it
// read it (nil when the status does not carry it).
func (a *affinity) adoptTTL(ctx context.Context) (*jetstream.StreamInfo, error) {
	st, err := a.kv.Status(ctx)
	if err != nil {
		return nil, err
	}
	if st.TTL() > 0 {
		a.ttl.Store(int64(st.TTL()))
	}
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		return bs.StreamInfo(), nil
	}
	return nil, nil
}

// earlier reports whether a pin naming this instance, at revision rev,
// was written by an earlier run of a worker under the same id (a process
// started again keeps its hostname, and often its pid: the default id),
// which kept the session's state: this run has none of it. A revision up
// to the stream's last sequence when this worker started is such a pin,
// unless the bucket was made again since (another stream, whose pins are
// all this run's). Should the stream not be read, the pin is taken for
// this run's (logged).
func (a *affinity) earlier(ctx context.Context, rev uint64) bool {
	r := a.run.Load()
	if r == nil || rev > r.seq {
		return false
	}
	info, err := a.adoptTTL(ctx)
	if err != nil || info == nil {
		a.w.count.jsErrors.Add(1)
		a.w.log.Warn("bus: reading the sessions bucket's stream to tell a pin of this worker's earlier run; taking the pin for this run's", "err", err)
		return false
	}
	if !info.Created.Equal(r.created) {
		a.run.CompareAndSwap(r, &runStart{created: info.Created}) // made again since this run began
		return false
	}
	return true
}

// lostRace reports a compare-and-set that lost to another writer: the key
// was created, or updated, meanwhile (a replicated bucket says the latter
// for both).
func lostRace(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// read reads the pin of key (jetstream.ErrKeyNotFound when there is
// none). After a lost compare-and-set, a replica that has not seen the
// winner's write yet could answer with what the loser saw: then, until
// newer (a revision past after, or any pin when after is afterNone), the
// read goes to the stream's leader. The pin is read with its stored
// headers (kv.Get, kv.LeaderGet): a server's answer stored under the key
// is kv.ErrForged, with the entry's revision, never a worker's name.
func (a *affinity) read(ctx context.Context, key string, after uint64) (kv.Entry, error) {
	newer := func(found bool, rev uint64) bool {
		return after == 0 || (after == afterNone && found) || (after != afterNone && rev > after)
	}
	e, err := readPin(kv.Get(ctx, a.js, a.kv.Bucket(), key))
	if err == nil && !e.Found {
		err = jetstream.ErrKeyNotFound
	}
	switch {
	case (err == nil || errors.Is(err, kv.ErrForged)) && newer(true, e.Revision):
		return e, err
	case after == 0:
		return kv.Entry{}, err
	}
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		le, err := readPin(kv.LeaderGet(ctx, a.js, a.kv.Bucket(), key))
		switch {
		case errors.Is(err, kv.ErrForged) && newer(true, le.Revision):
			return le, err
		case err != nil && !errors.Is(err, kv.ErrForged):
			return le, err
		case newer(le.Found, le.Revision) && !le.Found:
			return le, jetstream.ErrKeyNotFound
		case newer(le.Found, le.Revision):
			return le, nil
		}
		if err := kv.Sleep(ctx, wait); err != nil {
			return kv.Entry{}, err
		}
	}
}

// readPin checks a pin read: its value is an instance id (as
// startAffinity requires of one), or it is none a worker wrote, such as a
// server's JSON answer stored under the key without headers, and is
// refused as kv.ErrForged, never used as a subject token.
func readPin(e kv.Entry, err error) (kv.Entry, error) {
	if err == nil && e.Found && !toolkit.ValidName(string(e.Value)) {
		return kv.Entry{Revision: e.Revision, Created: e.Created}, fmt.Errorf("%w: a session's pin at revision %d is no worker's instance id", kv.ErrForged, e.Revision)
	}
	return e, err
}

// afterNone asks read for a pin that exists (a create was lost).
const afterNone = ^uint64(0)

// isAlive probes instance: it answers while it lives and serves. Every
// pass-on probes first (one round trip), so a call is not sent to a
// worker that has just gone. reply is the reply subject of the call to be
// passed on, or probeNoCall.
func (a *affinity) isAlive(instance, reply string) bool {
	_, err := a.w.nc.Request(wire.SubjectPinnedPrefix+instance, []byte(reply), a.probe)
	return err == nil
}

// Probes and stops. A worker that answered a probe is passed the call
// next, on tools.pinned.<instance>.<tool>. Were it to stop and drain that
// subscription in between, the call would reach no one: its caller would
// end it worker_lost at its stall timeout, though no worker was lost. So
// a probe names the call it is made for (its reply subject, the body),
// and a stopping worker, whose probe subscription is gone first, drains
// the calls' subscription only once the calls it was probed for have
// come (or forwardWait has passed: the prober died, or answered the call
// itself), and the probe timeout after the last empty probe (an
// earlier build's).

// forwardWait bounds how long a stopping worker waits for a call it was
// probed for; maxExpected bounds the calls it remembers (past it, a probe
// counts as one that names none); probeNoCall is the body of a probe
// after which no call is passed on (a forwarded call's: answered
// unavailable when its session's worker lives), a wildcard, which is no
// call's reply subject, and not empty, as an earlier build's probe is.
const (
	forwardWait = 2 * time.Second
	maxExpected = 4096
	probeNoCall = "*"
)

// probed answers a probe, unless the worker is stopping, and notes the
// call it is made for.
func (a *affinity) probed(m *nats.Msg) {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return
	}
	reply := string(m.Data)
	if reply == probeNoCall {
		a.mu.Unlock()
		m.Respond(nil)
		return
	}
	now := time.Now()
	if a.expected == nil {
		a.expected = map[string]probeNote{}
	}
	if len(a.expected) >= maxExpected && now.Sub(a.pruned) >= forwardWait/8 {
		// Not at every probe: anyone can send probes, and a scan holds
		// the lock session routing takes.
		a.pruned = now
		a.scans++
		for r, e := range a.expected {
			if now.Sub(e.at) >= forwardWait {
				delete(a.expected, r)
			}
		}
	}
	if reply == "" || len(reply) > 1024 || len(a.expected) >= maxExpected {
		a.blind = now
	} else {
		e := a.expected[reply]
		a.expected[reply] = probeNote{at: now, n: e.n + 1}
	}
	a.mu.Unlock()
	m.Respond(nil)
}

// probeNote is how many calls of a reply subject a stop waits for, and
// when the last was probed for.
type probeNote struct {
	at time.Time
	n  int
}

// arrived notes that a call passed on here (Toolbus-Forwarded) came, by
// its reply subject.
func (a *affinity) arrived(reply string) {
	a.mu.Lock()
	if e, ok := a.expected[reply]; ok && e.n > 1 {
		e.n--
		a.expected[reply] = e
	} else {
		delete(a.expected, reply)
	}
	a.mu.Unlock()
}

// awaitForwards waits, once the probe subscription is gone (stop), until
// the calls this worker was probed for have come, or ctx is done.
func (a *affinity) awaitForwards(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		a.mu.Lock()
		now := time.Now()
		waiting := now.Sub(a.blind) < a.probe
		for r, e := range a.expected {
			if now.Sub(e.at) >= forwardWait {
				delete(a.expected, r)
				continue
			}
			waiting = true
		}
		a.mu.Unlock()
		if !waiting {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// waitingForwards reports whether a stop waits for calls this worker was
// probed for (tests).
func (a *affinity) waitingForwards() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopped && len(a.expected) > 0
}

// forward passes the call on to the pinned worker, which answers the
// caller directly, numbering its frames after seq (the last this worker
// sent). The caller's timeout goes on as what is left of it (ctx's
// deadline), not as the caller sent it: routing took some of it; the
// trace goes on from ctx's span (the routing). It returns the publish's
// error: the call did not go (ErrMaxPayload: the headers added here made
// a request that fitted too large).
func (a *affinity) forward(ctx context.Context, in *incoming, owner string, seq uint64) error {
	h := nats.Header{}
	for k, v := range in.header {
		h[k] = v
	}
	if dl, ok := ctx.Deadline(); ok && h.Get(wire.HeaderTimeout) != "" {
		h.Set(wire.HeaderTimeout, strconv.FormatInt(max(time.Until(dl).Milliseconds(), 0), 10))
	}
	h = injectTrace(ctx, h) // the pinned worker's span is the routing span's child
	h.Set(wire.HeaderForwarded, a.w.opts.Instance)
	// A Toolbus-Pin-Lost is evidence for the worker that had the call
	// from its sender (a client's publish found no responders; a worker
	// lacking the tool passed it on): it was used here, where it named
	// another worker than the pin. Carried on, it would name a worker the
	// session may have moved back to since, live, and the pinned worker
	// would take the session over from it without a probe.
	h.Del(wire.HeaderPinLost)
	if seq > 0 {
		h.Set(wire.HeaderSeqAfter, strconv.FormatUint(seq, 10))
	} else {
		h.Del(wire.HeaderSeqAfter)
	}
	m := &nats.Msg{Subject: wire.PinnedSubject(owner, in.tool, in.identity), Reply: in.reply, Header: h, Data: in.data}
	if a.beforeForward != nil {
		a.beforeForward()
	}
	if err := a.w.nc.PublishMsg(m); err != nil {
		a.w.log.Warn("bus: passing a call on to its session's worker", "worker", owner, "err", err)
		return err
	}
	if a.afterForward != nil {
		a.afterForward()
	}
	return nil
}

// notForwarded is the final of a call that could not be passed on to its
// session's worker owner: invalid_input when the request, with the
// headers a pass-on adds, is over the server's max_payload (the caller
// can send less), unavailable otherwise. It did not run.
func (w *Worker) notForwarded(id, owner string, err error) *toolkit.Response {
	if errors.Is(err, nats.ErrMaxPayload) {
		return w.finalFor(id, toolkit.CodeInvalidInput, fmt.Sprintf(
			"RequestTooLargeError: the call's request is too large to pass on to worker %s, which runs this session's stateful tools: with the headers a pass-on adds it is over the server's max_payload of %d bytes; send less input.",
			owner, w.nc.MaxPayload()))
	}
	return w.finalFor(id, toolkit.CodeUnavailable, fmt.Sprintf(
		"ToolUnavailableError: the call could not be passed on to worker %s, which runs this session's stateful tools: %v. It did not run; retry later.", owner, err))
}

// stop ends the probe subscription (its pins stay: the next call of each
// session finds the worker gone and moves the session) and returns the
// subscription of the calls passed or sent to this worker, for the worker
// to drain after its others once the calls it was probed for have come
// (awaitForwards): a call already on its way is answered.
func (a *affinity) stop() *nats.Subscription {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	if a.subs[0] != nil {
		a.subs[0].Unsubscribe()
	}
	return a.subs[1]
}

// movedText is the line a final gets when its call moved the session
// (from "": its pin named no worker, pin.unknownFrom; lacking: the tool
// that from, alive, does not serve, pin.lacked). Its "[toolbus] "
// prefix marks it as the bus's (toolctl prints it on a line of its own,
// after the tool's streamed text).
func movedText(from, to string, full bool, lacking string) string {
	gone := "which is gone"
	if lacking != "" {
		gone = "which does not serve " + lacking
	}
	if full && from == to {
		return fmt.Sprintf("[toolbus] This session's stateful tools ran on an earlier run of worker %s, which was started again since; the sessions bucket is full, so the session is pinned to no worker and its calls may each run on another until pins expire: files and other state from earlier calls may be missing.", to)
	}
	if full {
		return fmt.Sprintf("[toolbus] This session's stateful tools ran on worker %s, %s; this call ran on worker %s, but the sessions bucket is full, so the session is pinned to no worker and its calls may each run on another until pins expire: files and other state from earlier calls may be missing.", from, gone, to)
	}
	if from == "" {
		return fmt.Sprintf("[toolbus] This session's stateful tools now run on worker %s: its pin was not written by toolbus and names no worker, so files and other state from earlier calls may be missing.", to)
	}
	if from == to {
		return fmt.Sprintf("[toolbus] This session's stateful tools ran on an earlier run of worker %s, which was started again since: files and other state from earlier calls may be missing.", to)
	}
	return fmt.Sprintf("[toolbus] This session's stateful tools moved from worker %s, %s, to worker %s: files and other state from earlier calls may be missing.", from, gone, to)
}

// SessionPin is one session pinned to a worker (Client.Sessions).
type SessionPin struct {
	Identity string    // the caller identity; "" for anonymous sessions
	Session  string    // "" is the default session
	Worker   string    // the instance its session-bound tools run on
	Since    time.Time // when the pin was last written (claimed or renewed)
	Groups   []string  // the session's active groups
	// GroupsErr is why the session's groups could not be read (a stored
	// value that is not the session's groups: subjects.md, Group state);
	// Groups is then nil.
	GroupsErr error
}

// Sessions lists the sessions pinned to workers, oldest pin first; none
// when the fleet has no sessions bucket. A session whose groups cannot be
// read is listed with the reason (SessionPin.GroupsErr).
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
		// A server's answer stored under the key (kv.ErrForged) names no
		// worker: not listed (the session's next call takes it over).
		e, err := readPin(kv.Get(ctx, js, b.Bucket(), key))
		if err != nil || !e.Found {
			continue // expired or deleted meanwhile
		}
		identity, session := toolkit.SplitScope(scope)
		p := SessionPin{Identity: identity, Session: session, Worker: string(e.Value), Since: e.Created}
		if p.Groups, _, err = toolkit.LoadActive(ctx, state, f.Groups(), scope, 0); err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("bus: reading the groups of session %s: %w", wire.Quote(session), err)
			}
			// One session's bad value (written by hand) is that
			// session's trouble, not the listing's.
			p.GroupsErr = err
		}
		pins = append(pins, p)
	}
	slices.SortFunc(pins, func(a, b SessionPin) int { return a.Since.Compare(b.Since) })
	return pins, nil
}
