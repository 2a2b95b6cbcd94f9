package bus

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// DefaultStateWait bounds KVState's retries when the caller's context has
// no deadline.
const DefaultStateWait = 5 * time.Second

// ErrStaleGroupState is returned (wrapped) by KVState.Load when no state
// at least as recent as the requested revision could be read: the
// revision is more than RevisionLead past the bucket's last one, or the
// bucket did not reach it within RevisionWait (or before the context's
// deadline, or KVStateOptions.MaxWait, when sooner). The message names
// the revision asked for and the bucket's last revision.
var ErrStaleGroupState = errors.New("bus: group state older than the requested revision")

// A revision is asked for by whoever sends a call or a list request, and
// may name any number. The bucket's stream leader has every revision the
// bucket wrote (it is the stream's sequence), so a revision past the
// leader's last sequence is either a moment away (a leader just elected,
// still applying what was committed) or was never written by this bucket
// (made up, or from before the bucket was deleted and made again).
// KVState.Load therefore waits for a revision past the leader's last
// sequence by at most RevisionLead for at most RevisionWait, and fails at
// once for one further past: no caller makes a worker poll the stream
// until the caller's deadline, however far that is.
const (
	// RevisionWait bounds how long Load waits for a revision the stream
	// leader has not reached.
	RevisionWait = 2 * time.Second
	// RevisionLead is how far past the leader's last sequence a revision
	// may be and still be waited for.
	RevisionLead = 1024
)

// KVStateOptions configure NewKVState. A nil *KVStateOptions means the
// defaults; so does every zero field.
type KVStateOptions struct {
	// Bucket is the KV bucket name ([A-Za-z0-9_-]+); "" means
	// wire.BucketGroups.
	Bucket string
	// Replicas of the bucket when KVState creates it (1 to 5); 0 means 1.
	Replicas int
	// Storage of the bucket when KVState creates it; the zero value is
	// jetstream.FileStorage.
	Storage jetstream.StorageType
	// TTL makes a session's state expire that long after its last
	// reset_tools (the bucket's max age, set when KVState creates it); the
	// session then falls back to the toolkit's default groups. 0 means
	// DefaultSessionTTL; negative keeps states forever.
	TTL time.Duration
	// MaxSessions bounds the sessions the bucket holds when KVState
	// creates it (kv.OpenBounded), so callers that invent session names
	// fill the bound, not the servers' disks: past it a new session's
	// state is refused (ErrStateFull) until states expire. 0 means
	// DefaultMaxStoredSessions; negative no bound.
	MaxSessions int64
	// MaxWait bounds Load and Store when ctx has no deadline: how long
	// they wait for a revision, retry a lost compare-and-set, or ride out
	// a moment without a stream leader. 0 means DefaultStateWait.
	MaxWait time.Duration
}

// KVState is a toolkit.GroupState on a JetStream KV bucket, one key per
// session, so every worker of a fleet (on any node of a cluster) sees the
// same activation.
//
// Store writes by compare-and-set on the key's revision and returns the
// new revision, which is the bucket stream's sequence number and so grows
// with every write to the bucket. Load(minRevision) never returns a state
// older than minRevision: KV reads are direct gets that any replica may
// answer and a lagging replica can return an older value, so a stale read
// is repeated against the stream leader, with backoff, until the deadline.
//
// Keys and values are documented in subjects.md (Group state): a session
// is stored under wire.SessionKey(session), the value is a JSON object
// naming that key and the groups (storedGroups). An existing bucket is
// bound as is (kv.Open).
//
// KVState is safe for concurrent use.
type KVState struct {
	js      jetstream.JetStream
	kv      jetstream.KeyValue
	bucket  string
	stream  string
	maxWait time.Duration
	// cfg is the bucket as this KVState made it (nil: bound for
	// reading), to make it again should it be deleted.
	cfg         *jetstream.KeyValueConfig
	maxSessions int64 // its bound, with cfg
}

var _ toolkit.GroupState = (*KVState)(nil)

// NewKVState binds the configured bucket, creating it when it does not
// exist. It fails for an invalid configuration and when JetStream is not
// available.
func NewKVState(ctx context.Context, js jetstream.JetStream, opts *KVStateOptions) (*KVState, error) {
	if js == nil {
		return nil, errors.New("bus: NewKVState: nil JetStream")
	}
	var o KVStateOptions
	if opts != nil {
		o = *opts
	}
	if o.Bucket == "" {
		o.Bucket = wire.BucketGroups
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.MaxWait < 0 {
		return nil, fmt.Errorf("bus: KV bucket %q: negative MaxWait %v", o.Bucket, o.MaxWait)
	}
	if o.MaxWait == 0 {
		o.MaxWait = DefaultStateWait
	}
	cfg := GroupsBucketConfig(&o)
	b, err := kv.OpenBounded(ctx, js, cfg, MaxSessionsFor(o.MaxSessions))
	if err != nil {
		return nil, fmt.Errorf("bus: group state: %w", err)
	}
	st := newKVState(js, b, o.MaxWait)
	st.cfg, st.maxSessions = &cfg, MaxSessionsFor(o.MaxSessions)
	return st, nil
}

// ErrStateFull is the error of a Store refused because the group-state
// bucket is at its bound (KVStateOptions.MaxSessions, or one an operator
// gave it): new sessions' state is refused until states expire.
var ErrStateFull = errors.New("the group-state bucket is full")

// full is the error of a Store the full bucket refused: what is wrong
// and what to do.
func (s *KVState) full(ctx context.Context, session string, err error) error {
	bound := "its bound"
	if st, serr := s.kv.Status(ctx); serr == nil {
		if kst, ok := st.(*jetstream.KeyValueBucketStatus); ok {
			c := kst.StreamInfo().Config
			bound = fmt.Sprintf("max_bytes %d, max_msgs %d", c.MaxBytes, c.MaxMsgs)
		}
	}
	raise := fmt.Sprintf("nats stream edit %s --max-msgs N, or state.max_sessions before the bucket is made", s.stream)
	if strings.Contains(err.Error(), "bytes") {
		raise = fmt.Sprintf("nats kv edit %s --max-bucket-size SIZE", s.bucket)
	}
	return fmt.Errorf("bus: storing groups of session %s: %w: bucket %q is at %s (%v); new sessions' state is refused until states expire (state.session_ttl); raise the bound (%s) or shorten state.session_ttl",
		wire.Quote(session), ErrStateFull, s.bucket, bound, err, raise)
}

// DefaultSessionTTL is how long a session's state is kept after its last
// change unless configured otherwise.
const DefaultSessionTTL = 7 * 24 * time.Hour

// DefaultMaxStoredSessions bounds each bucket of sessions' state (group
// state, session pins, permission policies) when it is made: 4 million
// sessions within their TTL, about 1 GB of a server's disk at a few
// hundred bytes a session.
const DefaultMaxStoredSessions = 4_000_000

// MaxSessionsFor is the bound on a sessions' state bucket for an
// option's value: 0 the default, negative none (-1).
func MaxSessionsFor(v int64) int64 {
	switch {
	case v == 0:
		return DefaultMaxStoredSessions
	case v < 0:
		return -1
	}
	return v
}

// GroupsBucketConfig is the configuration of the group-state bucket for
// opts (nil: the defaults), as whoever creates it first creates it: the
// workers and the MCP gateway agree on it.
func GroupsBucketConfig(opts *KVStateOptions) jetstream.KeyValueConfig {
	var o KVStateOptions
	if opts != nil {
		o = *opts
	}
	ttl := o.TTL
	switch {
	case ttl == 0:
		ttl = DefaultSessionTTL
	case ttl < 0:
		ttl = 0
	}
	return jetstream.KeyValueConfig{
		Bucket:      cmp.Or(o.Bucket, wire.BucketGroups),
		Description: "toolbus: active tool groups per session",
		History:     1,
		TTL:         ttl,
		Storage:     o.Storage,
		Replicas:    cmp.Or(o.Replicas, 1),
	}
}

// Status reports the bucket's configuration and state (its TTL, to check
// against what the worker was configured with).
func (s *KVState) Status(ctx context.Context) (jetstream.KeyValueStatus, error) {
	return s.kv.Status(ctx)
}

func newKVState(js jetstream.JetStream, b jetstream.KeyValue, maxWait time.Duration) *KVState {
	return &KVState{js: js, kv: b, bucket: b.Bucket(), stream: "KV_" + b.Bucket(), maxWait: maxWait}
}

// bindKVState binds an existing bucket for reading; it returns nil, nil
// when the bucket does not exist (no session has stored state). It reads
// the key probe to find it (kv.BindReader), not the bucket's stream
// information, which a caller's role may not ask for.
func bindKVState(ctx context.Context, js jetstream.JetStream, bucket, probe string) (*KVState, error) {
	b, err := kv.BindReader(ctx, js, bucket, probe)
	if err != nil || b == nil {
		return nil, err
	}
	return newKVState(js, b, DefaultStateWait), nil
}

// Bucket returns the name of the KV bucket.
func (s *KVState) Bucket() string { return s.bucket }

// Store replaces the active groups of session and returns the new
// revision. It creates the key when absent and otherwise updates it on the
// revision it read, retrying when another writer got there first or the
// stream has no leader for the moment (until the context's deadline, or
// KVStateOptions.MaxWait when ctx has none). A write the server stored
// whose answer was still to come when ctx ended is answered with its
// revision (kv.Update), not with ctx's error: the groups changed, and
// the caller's later calls are to carry that revision.
func (s *KVState) Store(ctx context.Context, session string, groups []string) (uint64, error) {
	key, err := wire.SessionKey(session)
	if err != nil {
		return 0, err
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	if groups == nil {
		groups = []string{}
	}
	val, err := json.Marshal(storedGroups{Key: key, Groups: groups})
	if err != nil {
		return 0, fmt.Errorf("bus: encoding groups of session %s: %w", wire.Quote(session), err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.maxWait)
		defer cancel()
	}
	wait := time.Millisecond
	// When the bucket's existence was last asked (gone): asked again
	// after goneReask while the write fails, since making the bucket
	// again may fail for a moment (a request timed out under load).
	var askedAt time.Time
	for {
		var rev uint64
		rctx, cancel := context.WithTimeout(ctx, stateTry)
		e, err := kv.Get(rctx, s.js, s.bucket, key)
		cancel()
		switch {
		case errors.Is(err, kv.ErrForged), err == nil && e.Found:
			// A server's answer stored under the key (kv.ErrForged) is
			// replaced like any value: the write is its repair.
			rev, err = kv.Update(ctx, s.js, s.bucket, key, val, e.Revision)
		case err == nil:
			rev, err = kv.Update(ctx, s.js, s.bucket, key, val, 0)
		}
		if err == nil {
			return rev, nil
		}
		// ErrKeyExists: created concurrently (or the read was stale);
		// ErrKeyRevisionMismatch: updated concurrently; a read
		// unanswered within stateTry. Read again. kv.Update rode out
		// its own unanswered attempts, and answered one stored as ctx
		// ended with its revision.
		if kv.Full(err) {
			return 0, s.full(ctx, session, err)
		}
		unanswered := ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
		if !unanswered && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) && !kv.Transient(err) && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return 0, fmt.Errorf("bus: storing groups of session %s: %w", wire.Quote(session), err)
		}
		if s.cfg != nil && (askedAt.IsZero() || time.Since(askedAt) >= goneReask) {
			asked := false
			gone := s.gone(ctx, err, &asked)
			if asked {
				askedAt = time.Now()
			}
			// Deleted (nats kv rm): made again, as the first worker did.
			if gone {
				if _, oerr := kv.OpenBounded(ctx, s.js, *s.cfg, s.maxSessions); oerr == nil {
					continue
				}
			}
		}
		if serr := kv.Sleep(ctx, wait); serr != nil {
			return 0, fmt.Errorf("bus: storing groups of session %s: %w (last error: %v)", wire.Quote(session), serr, err)
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// Load returns the active groups of session; ok is false when the session
// has no stored state (never stored, deleted, or expired by the bucket's
// TTL).
//
// With minRevision > 0 the answer reflects the bucket at or after that
// revision. A read that returns an older revision of the key (a lagging
// replica) is checked against the stream leader: once the leader has
// reached minRevision its value for the key is returned (that value may be
// older than minRevision when minRevision was a write to another key, or
// absent when the state expired). Until then Load retries with backoff,
// for at most RevisionWait, and fails with ErrStaleGroupState; at once
// when minRevision is more than RevisionLead past the leader's last
// sequence; and at the context's deadline (or after
// KVStateOptions.MaxWait when ctx has none) when that comes first. A
// moment without a stream leader (no responders, 503) is retried until
// that deadline.
func (s *KVState) Load(ctx context.Context, session string, minRevision uint64) ([]string, uint64, bool, error) {
	key, err := wire.SessionKey(session)
	if err != nil {
		return nil, 0, false, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.maxWait)
		defer cancel()
	}
	wait := time.Millisecond
	var seen, last uint64
	var behind time.Time // when the stream leader was first seen behind minRevision
	asked := false       // whether the bucket still exists (gone)
	for {
		rctx, cancel := context.WithTimeout(ctx, stateTry)
		r, err := s.read(rctx, key, minRevision, last)
		cancel()
		switch {
		case err == nil && r.behind && minRevision-r.last > RevisionLead:
			return nil, 0, false, fmt.Errorf("%w: session %s: revision %d is more than %d past the bucket's last revision %d, so the bucket never wrote it (made up, or from before the bucket was made again)",
				ErrStaleGroupState, wire.Quote(session), minRevision, RevisionLead, r.last)
		case err == nil && r.behind && !behind.IsZero() && time.Since(behind) >= RevisionWait:
			return nil, 0, false, fmt.Errorf("%w: session %s: revision %d not reached within %v; it is past the bucket's last revision %d",
				ErrStaleGroupState, wire.Quote(session), minRevision, RevisionWait, r.last)
		case err == nil && r.fresh:
			if !r.found {
				return nil, r.rev, false, nil
			}
			groups, err := decodeGroups(key, r.val, r.hdr)
			if err != nil {
				return nil, 0, false, fmt.Errorf("bus: loading groups of session %s: bad value at revision %d: %w", wire.Quote(session), r.rev, err)
			}
			return groups, r.rev, true, nil
		case err == nil:
			seen, last = max(seen, r.rev), max(last, r.last)
			if r.behind && behind.IsZero() {
				behind = time.Now()
			}
		case ctx.Err() == nil && !kv.Transient(err) && !errors.Is(err, context.DeadlineExceeded): // not unanswered within stateTry
			return nil, 0, false, fmt.Errorf("bus: loading groups of session %s: %w", wire.Quote(session), err)
		case !asked && s.gone(ctx, err, &asked):
			return nil, 0, false, nil // the bucket was deleted: no session has state
		}
		if serr := kv.Sleep(ctx, wait); serr != nil || ctx.Err() != nil {
			if minRevision > 0 {
				return nil, 0, false, fmt.Errorf("%w: session %s: revision %d not reached (the bucket's last revision seen %d, the session's %d): %v",
					ErrStaleGroupState, wire.Quote(session), minRevision, last, seen, context.Cause(ctx))
			}
			return nil, 0, false, fmt.Errorf("bus: loading groups of session %s: %w (last error: %v)", wire.Quote(session), context.Cause(ctx), err)
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// Delete removes the stored state of session, which then falls back to
// the toolkit's default groups, and returns the revision of the deletion.
// It retries while the stream has no leader for the moment (until the
// context's deadline, or KVStateOptions.MaxWait when ctx has none), and
// answers a deletion stored as ctx ended with its revision (kv.Delete).
func (s *KVState) Delete(ctx context.Context, session string) (uint64, error) {
	key, err := wire.SessionKey(session)
	if err != nil {
		return 0, err
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.maxWait)
		defer cancel()
	}
	// kv.Delete rides out a moment without a leader and answers a marker
	// stored as ctx ended with its revision.
	rev, err := kv.Delete(ctx, s.js, s.bucket, key, 0)
	if err != nil {
		return 0, fmt.Errorf("bus: deleting groups of session %s: %w", wire.Quote(session), err)
	}
	return rev, nil
}

// writable refuses a write to a bucket bound for reading (bindKVState):
// kv.ErrReadOnly, as its KeyValue's own methods answer.
func (s *KVState) writable() error {
	if _, ok := s.kv.(kv.ReadOnly); ok {
		return fmt.Errorf("%w: %q", kv.ErrReadOnly, s.bucket)
	}
	return nil
}

// stateTry bounds one attempt of Store, Load and Delete: the stream
// leader stepping down drops the answer to a request on its way (or the
// request), which would be waited for until the deadline, the call's
// own when a call stores or loads its session's groups.
const stateTry = time.Second

// goneReask is how long a Store whose write keeps failing waits before it
// asks again whether the bucket exists.
const goneReask = 250 * time.Millisecond

// gone reports whether err, from a request to the bucket, came from its
// stream not existing (kv.Gone). It asks (sets *asked) once per Load, and
// every goneReask while a Store's write fails.
func (s *KVState) gone(ctx context.Context, err error, asked *bool) bool {
	if errors.Is(err, jetstream.ErrBucketNotFound) { // kv.Write asked
		*asked = true
		return true
	}
	if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse) {
		return false
	}
	*asked = true
	return kv.GoneFrom(ctx, s.js, s.kv, err)
}

// stateRead is one read of a session's key.
type stateRead struct {
	val   []byte
	hdr   nats.Header // the value's stored headers
	rev   uint64      // of the value or the delete marker; 0 when unknown
	found bool
	fresh bool // at least as recent as the requested revision
	// behind: the stream leader has not reached the requested revision;
	// its last sequence is last.
	behind bool
	last   uint64
}

// read does one attempt: a direct get (any replica) and, when that is
// older than minRevision, the stream leader's view if the leader has
// reached minRevision. A read that is not fresh must be retried. known is
// the bucket's last revision seen by an earlier attempt (0: none).
func (s *KVState) read(ctx context.Context, key string, minRevision, known uint64) (stateRead, error) {
	// With the stored headers (kv.Get): a server's answer a caller had
	// stored under the key is an error (kv.ErrForged), neither groups nor
	// their absence, unless a lagging replica answered and the leader
	// has a newer value.
	e, err := kv.Get(ctx, s.js, s.bucket, key)
	var seen uint64
	switch {
	case errors.Is(err, kv.ErrForged) && e.Revision >= minRevision:
		return stateRead{}, err
	case errors.Is(err, kv.ErrForged):
		seen = e.Revision
	case err != nil:
		return stateRead{}, err
	case e.Found && e.Revision >= minRevision:
		return stateRead{val: e.Value, hdr: e.Header, rev: e.Revision, found: true, fresh: true}, nil
	case e.Found:
		seen = e.Revision
	case minRevision == 0:
		return stateRead{fresh: true}, nil
	}
	if _, ok := s.kv.(kv.ReadOnly); ok {
		// A reader of its own keys (bindKVState) may neither ask the
		// stream for its information nor get a key from the leader: it
		// learns the last sequence from a consumer of its keys (once it
		// is known to have reached minRevision, not again), and reads
		// the key again.
		if known >= minRevision {
			return stateRead{rev: seen, last: known}, nil
		}
		filter := ">"
		if identity, _, ok := strings.Cut(key, "."); ok {
			filter = identity + ".>"
		}
		last, err := kv.LastRevision(ctx, s.js, s.bucket, filter)
		switch {
		case err != nil:
			return stateRead{}, err
		case last < minRevision:
			return stateRead{rev: seen, behind: true, last: last}, nil
		}
		return stateRead{rev: seen, last: last}, nil
	}
	// Ask the leader for its last sequence first, then for the key, so
	// the key's answer is at least as new as that sequence.
	st, err := s.js.Stream(ctx, s.stream)
	if err != nil {
		return stateRead{}, err
	}
	if info := st.CachedInfo(); info == nil {
		return stateRead{rev: seen}, nil // asked again
	} else if info.State.LastSeq < minRevision {
		return stateRead{rev: seen, behind: true, last: info.State.LastSeq}, nil // the leader is behind too
	}
	r, err := s.leaderGet(ctx, key)
	if err != nil {
		return stateRead{}, err
	}
	r.fresh = true
	return r, nil
}

// leaderGet reads the last message of key through the stream leader.
func (s *KVState) leaderGet(ctx context.Context, key string) (stateRead, error) {
	e, err := kv.LeaderGet(ctx, s.js, s.bucket, key)
	if err != nil {
		return stateRead{}, err
	}
	return stateRead{val: e.Value, hdr: e.Header, rev: e.Revision, found: e.Found}, nil
}

// storedGroups is a session's groups as the bucket holds them: with the
// key they are stored under. A direct get asked with no_hdr answers with
// a stored value alone, and a caller may have the server store that
// answer under any key (a request's reply subject): a copy of a session
// of its own, stored over another identity's session, would otherwise
// read as that session's groups. A value naming another key is refused.
type storedGroups struct {
	Key    string   `json:"key"`
	Groups []string `json:"groups"`
}

// decodeGroups parses the value stored under key, read with its stored
// headers hdr: a storedGroups naming key, or a bare JSON array of group
// names as earlier builds wrote it. Such an array names no key, so it is
// read only as its writer stored it, by compare-and-set (kv.CASStored),
// which a headerless copy is not.
func decodeGroups(key string, val []byte, hdr nats.Header) ([]string, error) {
	if v := bytes.TrimLeft(val, " \t\r\n"); len(v) > 0 && v[0] == '[' {
		if !kv.CASStored(hdr) {
			return nil, fmt.Errorf("a bare JSON array of group names (as earlier versions stored) without the header of a compare-and-set: a copy without headers stored over the session's groups, or a value put by hand; want {\"key\":%q,\"groups\":[...]}", key)
		}
		var groups []string
		if err := json.Unmarshal(val, &groups); err != nil {
			return nil, fmt.Errorf("want a JSON array of group names: %w", err)
		}
		return slices.Clip(groups), nil
	}
	var sg storedGroups
	if err := json.Unmarshal(val, &sg); err != nil {
		return nil, fmt.Errorf("want {\"key\":%q,\"groups\":[...]}: %w", key, err)
	}
	switch {
	case sg.Key != key:
		return nil, fmt.Errorf("it holds the groups of key %q, not of %q (a copy stored over them)", sg.Key, key)
	case sg.Groups == nil:
		return nil, fmt.Errorf("want {\"key\":%q,\"groups\":[...]}, got no groups", key)
	}
	return slices.Clip(sg.Groups), nil
}
