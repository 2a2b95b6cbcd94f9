package permission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// KVConfig configures a KVStore. A nil *KVConfig means the defaults.
type KVConfig struct {
	// Bucket holds session policies; "" means wire.BucketPermissions.
	Bucket string
	// ApprovalsBucket holds pending calls and approvals; "" means
	// wire.BucketApprovals.
	ApprovalsBucket string
	// ApprovalTTL is how long pending calls and approvals are kept (the
	// approvals bucket's max age). 0 means the existing bucket's, or
	// DefaultApprovalTTL for a new one; another value than an existing
	// bucket's is an error (the bucket, created before, would expire
	// entries at its own age).
	ApprovalTTL time.Duration
	// ApprovalsMaxBytes bounds the approvals bucket when it is created, so
	// callers asking for approvals cannot fill the JetStream store the
	// fleet shares (a full bucket records no more pending calls until
	// entries expire). 0 means DefaultApprovalsMaxBytes, negative no bound.
	ApprovalsMaxBytes int64
	// BindOnly binds the buckets only when they exist and never creates
	// them: for tools other than workers (toolctl, the gateway), so that
	// the workers' settings (approval_ttl, session_ttl, replicas) decide
	// the buckets'. Without them nothing is pending or set, and approving
	// or setting a session's mode or rules fails saying so.
	BindOnly bool
	// PoliciesOnly opens the policy bucket alone: for a reader of
	// sessions' modes and rules (toolctl listing a caller's session,
	// whose role may not see the approvals bucket). Nothing is then
	// pending or approved, and recording either fails.
	PoliciesOnly bool
	// Identity, with BindOnly and PoliciesOnly, is the caller identity
	// whose sessions' policies the store reads: the policy bucket is then
	// bound by reading a key of that identity's (kv.BindReader), not by
	// asking its stream, which a caller's role may not (its information
	// names every session's key).
	Identity string
	// PolicyTTL is how long a session's mode and rules are kept after
	// their last change (the policy bucket's max age, set when it is
	// created); 0 means bus.DefaultSessionTTL, negative forever.
	PolicyTTL time.Duration
	// PolicyMaxSessions bounds the sessions the policy bucket holds when
	// it is made, so callers inventing sessions cannot fill the JetStream
	// store (a full bucket takes no new session's policy until policies
	// expire). 0 means bus.DefaultMaxStoredSessions, negative no bound.
	PolicyMaxSessions int64
	// Replicas of both buckets; 0 means 1.
	Replicas int
	// Storage of both buckets; the zero value is file storage, so
	// approvals survive a server restart.
	Storage jetstream.StorageType
}

// DefaultApprovalTTL is how long an approval (or a pending call) lasts.
const DefaultApprovalTTL = 24 * time.Hour

// DefaultApprovalsMaxBytes bounds a new approvals bucket: about 30,000
// pending calls of the largest size.
const DefaultApprovalsMaxBytes = 256 << 20

// KVStore is a Store on two JetStream KV buckets, shared by every worker
// and client of a fleet, and durable across restarts. Keys:
//
//	<Bucket>          s.<session>                   SessionPolicy and its session (JSON, storedPolicy)
//	<ApprovalsBucket> pending.<session>.<call-id>   Pending (JSON)
//	<ApprovalsBucket> approval.<session>.<call-id>  Approval (JSON)
//
// A call id is one key token (wire.KeyToken): itself when made only of
// [A-Za-z0-9_-], else "=" + unpadded base64url. A session is a session
// scope (toolkit.SessionScope) keyed as wire.ScopedKeyToken makes it: one
// token for an anonymous session, "<identity>.<token>" for a caller's, so
// NATS permissions can confine a caller to its own keys. Both buckets are
// opened with kv.Open: created when missing, bound as they are otherwise. Policies change by
// compare-and-set, and an approval is consumed by deleting exactly the
// revision that was read, so two workers can never both use it. KV reads
// are not read-after-write consistent across a cluster (a worker may see a
// just-made approval a moment late and answer approval_required once more);
// on a single server they are.
type KVStore struct {
	js          jetstream.JetStream // reads values with their headers (readJSON)
	policies    jetstream.KeyValue  // nil: not created yet (KVConfig.BindOnly)
	approvals   jetstream.KeyValue  // nil: not created yet (KVConfig.BindOnly)
	approvalTTL time.Duration       // the approvals bucket's max age
	maxBytes    int64               // the approvals bucket's bound, ≤ 0 for none

	afterClaim func() // tests: between ApprovePending's claim and its write
}

// ApprovalTTL is how long the approvals bucket keeps pending calls and
// approvals; a Guard on the store without Options.ApprovalTTL uses it.
func (s *KVStore) ApprovalTTL() time.Duration { return s.approvalTTL }

// NewKVStore creates (or opens) the buckets.
func NewKVStore(ctx context.Context, js jetstream.JetStream, cfg *KVConfig) (*KVStore, error) {
	if cfg == nil {
		cfg = &KVConfig{}
	}
	c := *cfg
	if c.Bucket == "" {
		c.Bucket = wire.BucketPermissions
	}
	if c.ApprovalsBucket == "" {
		c.ApprovalsBucket = wire.BucketApprovals
	}
	explicitTTL := c.ApprovalTTL != 0
	if c.ApprovalTTL == 0 {
		c.ApprovalTTL = DefaultApprovalTTL
	}
	if c.ApprovalTTL < 0 {
		return nil, fmt.Errorf("permission: negative approval TTL %v", c.ApprovalTTL)
	}
	switch {
	case c.ApprovalsMaxBytes == 0:
		c.ApprovalsMaxBytes = DefaultApprovalsMaxBytes
	case c.ApprovalsMaxBytes < 0:
		c.ApprovalsMaxBytes = -1
	}
	switch {
	case c.PolicyTTL == 0:
		c.PolicyTTL = bus.DefaultSessionTTL
	case c.PolicyTTL < 0:
		c.PolicyTTL = 0 // no max age
	}
	if c.Bucket == c.ApprovalsBucket {
		return nil, fmt.Errorf("permission: the policy and approval buckets must differ (both %q)", c.Bucket)
	}
	open := func(cfg jetstream.KeyValueConfig, maxEntries int64) (jetstream.KeyValue, error) {
		switch {
		case c.BindOnly && c.PoliciesOnly && c.Identity != "":
			return kv.BindReader(ctx, js, cfg.Bucket, sessionKey(toolkit.SessionScope(c.Identity, "")))
		case c.BindOnly:
			return kv.Bind(ctx, js, cfg.Bucket) // nil while no worker made it
		}
		return kv.OpenBounded(ctx, js, cfg, maxEntries)
	}
	pol, err := open(jetstream.KeyValueConfig{
		Bucket: c.Bucket, Description: "toolbus session permission policies",
		TTL: c.PolicyTTL, Replicas: c.Replicas, Storage: c.Storage,
	}, bus.MaxSessionsFor(c.PolicyMaxSessions))
	if err != nil {
		return nil, fmt.Errorf("permission: bucket %q: %w", c.Bucket, err)
	}
	if c.PoliciesOnly {
		return &KVStore{js: js, policies: pol, approvalTTL: c.ApprovalTTL}, nil
	}
	appr, err := open(jetstream.KeyValueConfig{
		Bucket: c.ApprovalsBucket, Description: "toolbus pending calls and one-shot approvals",
		TTL: c.ApprovalTTL, MaxBytes: c.ApprovalsMaxBytes, Replicas: c.Replicas, Storage: c.Storage,
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("permission: bucket %q: %w", c.ApprovalsBucket, err)
	}
	st := &KVStore{js: js, policies: pol, approvals: appr, approvalTTL: c.ApprovalTTL}
	if appr == nil {
		return st, nil
	}
	status, err := appr.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("permission: bucket %q: %w", c.ApprovalsBucket, err)
	}
	st.approvalTTL = status.TTL()
	if bs, ok := status.(*jetstream.KeyValueBucketStatus); ok {
		st.maxBytes = bs.StreamInfo().Config.MaxBytes
	}
	if explicitTTL && st.approvalTTL != c.ApprovalTTL {
		return nil, fmt.Errorf("permission: bucket %q keeps pending calls and approvals for %v, not the %v asked for (approval_ttl): it was created so before; ask for %v, or delete the bucket so that it is created again",
			c.ApprovalsBucket, st.approvalTTL, c.ApprovalTTL, st.approvalTTL)
	}
	return st, nil
}

func sessionKey(session string) string { return "s." + wire.ScopedKeyToken(session) }

// maxCallIDToken bounds the key token of a call id in the approvals
// bucket's keys (a bus call id is at most wire.MaxCallIDLen characters).
const maxCallIDToken = 256

// checkKeys refuses a session (and a call id, when not "") whose key
// could not be a NATS subject: the key goes into the subject of every
// read and write, and a subject past the server's control-line limit
// (4 KiB by default) makes the server close the connection, which the
// client library takes for fatal. A session's key is bounded as
// everywhere else (wire.SessionKey), so its call ends with a clear error
// and the worker's connection stays.
func checkKeys(session, callID string) error {
	if _, err := wire.SessionKey(session); err != nil {
		return fmt.Errorf("permission: %w", err)
	}
	if n := len(wire.KeyToken(callID)); callID != "" && n > maxCallIDToken {
		return fmt.Errorf("permission: a call id of %d bytes encodes to a %d-byte KV key token, over the %d-byte limit", len(callID), n, maxCallIDToken)
	}
	return nil
}
func pendingKey(session, callID string) string {
	return "pending." + wire.ScopedKeyToken(session) + "." + wire.KeyToken(callID)
}
func approvalKey(session, callID string) string {
	return "approval." + wire.ScopedKeyToken(session) + "." + wire.KeyToken(callID)
}

// storedPolicy is a session's policy as the bucket holds it: with the
// session scope it is stored for. A direct get asked with no_hdr answers
// with a stored value alone, and a caller may have the server store that
// answer under any key (a request's reply subject): a copy of a session
// of its own in bypass, stored over another session's policy, would
// otherwise read as that session's. A value without the scope (written
// by an earlier build) is read as the session's only as its writer
// stored it (kv.CASStored): a headerless copy of one is refused.
type storedPolicy struct {
	Session string `json:"session,omitempty"`
	SessionPolicy
}

// loadSession reads session's policy and its revision (0 when absent).
func (s *KVStore) loadSession(ctx context.Context, session string) (SessionPolicy, uint64, error) {
	key := sessionKey(session)
	var sp storedPolicy
	e, err := s.readJSON(ctx, s.policies, key, &sp)
	switch {
	case err != nil:
		return SessionPolicy{}, 0, err
	case !e.Found:
		return SessionPolicy{}, 0, nil
	case sp.Session != "" && sp.Session != session:
		return SessionPolicy{}, 0, &unreadableError{key: key, rev: e.Revision, err: fmt.Errorf("it is the policy of session %q, not of %q (a copy stored over it)", sp.Session, session)}
	case sp.Session == "" && !kv.CASStored(e.Header):
		return SessionPolicy{}, 0, &unreadableError{key: key, rev: e.Revision, err: errors.New("it names no session and was not stored by compare-and-set (a copy without headers stored over it)")}
	}
	// Earlier builds' AddRule stored a behavior as given ("Deny"), which
	// their Decide passed over: read as the behavior it names, stricter
	// than they did, rather than refused (a refused policy is replaced
	// whole by the session's next change, its deny rules with it).
	for i, r := range sp.Rules {
		if b, err := ParseBehavior(string(r.Behavior)); err == nil {
			sp.Rules[i].Behavior = b
		}
	}
	if err := sp.validate(); err != nil {
		// A mode or rule this build does not know would read as a looser
		// policy (an unknown behavior as no rule at all).
		return SessionPolicy{}, 0, &unreadableError{key: key, rev: e.Revision, err: err}
	}
	return sp.SessionPolicy, e.Revision, nil
}

// LoadSession implements Store.
func (s *KVStore) LoadSession(ctx context.Context, session string) (SessionPolicy, bool, error) {
	if s.policies == nil {
		return SessionPolicy{}, false, nil
	}
	if err := checkKeys(session, ""); err != nil {
		return SessionPolicy{}, false, err
	}
	p, rev, err := s.loadSession(ctx, session)
	return p, rev != 0, err
}

// maxCASAttempts bounds UpdateSession's retries under contention.
const maxCASAttempts = 32

// UpdateSession implements Store.
func (s *KVStore) UpdateSession(ctx context.Context, session string, fn func(*SessionPolicy) error) (SessionPolicy, error) {
	if s.policies == nil {
		return SessionPolicy{}, errNoPolicies
	}
	if err := checkKeys(session, ""); err != nil {
		return SessionPolicy{}, err
	}
	key := sessionKey(session)
	for range maxCASAttempts {
		p, rev, err := s.loadSession(ctx, session)
		var bad *unreadableError
		switch {
		case errors.As(err, &bad):
			// Not a policy (a server's answer a caller had stored there,
			// or a value this build cannot read): replaced, starting
			// from no policy, by compare-and-set on its revision.
			p, rev = SessionPolicy{}, bad.rev
		case err != nil:
			return SessionPolicy{}, err
		}
		if err := fn(&p); err != nil {
			return SessionPolicy{}, err
		}
		b, err := json.Marshal(storedPolicy{Session: session, SessionPolicy: p})
		if err != nil {
			return SessionPolicy{}, err
		}
		// Each attempt bounded, made again when unanswered or refused
		// for a moment without a leader, its own earlier write told
		// from another's (kv.Update).
		_, err = kv.Update(ctx, s.js, s.policies.Bucket(), key, b, rev)
		switch {
		case err == nil:
			return p, nil
		case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
			continue // another writer won; read again
		default:
			return SessionPolicy{}, fmt.Errorf("permission: storing the policy of session %q: %w", session, err)
		}
	}
	return SessionPolicy{}, fmt.Errorf("permission: storing the policy of session %q: too much contention", session)
}

// errNoApprovals, errNoPolicies: the store was opened with BindOnly before
// any worker created the bucket.
var (
	errNoApprovals = errors.New("permission: there is no approvals bucket yet: no worker with permissions has started")
	errNoPolicies  = errors.New("permission: there is no permissions bucket yet: no worker with permissions has started")
)

// pendingShare is the part of a bounded approvals bucket pending calls may
// fill: the rest stays for approvals and their removal, which operators
// make, so callers asking with fresh ids cannot crowd them out.
const pendingShare = 0.75

// PutPending implements Store. Past pendingShare of the bucket's bound it
// records nothing and says so.
func (s *KVStore) PutPending(ctx context.Context, p Pending) error {
	if s.approvals == nil {
		return errNoApprovals
	}
	if err := checkKeys(p.Session, p.CallID); err != nil {
		return err
	}
	if s.maxBytes > 0 {
		// Each attempt bounded as a write's: a stepdown may drop the
		// answer.
		st, err := kv.Retry(ctx, s.js, func(ctx context.Context) (jetstream.KeyValueStatus, error) {
			ctx, cancel := context.WithTimeout(ctx, kv.WriteTry)
			defer cancel()
			return s.approvals.Status(ctx)
		})
		if err != nil {
			return fmt.Errorf("permission: reading the approvals bucket's size: %w", err)
		}
		if float64(st.Bytes()) > pendingShare*float64(s.maxBytes) {
			return fmt.Errorf("permission: the approvals bucket holds %d bytes of %d: no more pending calls are recorded until entries expire", st.Bytes(), s.maxBytes)
		}
	}
	// A restored ask: its revision in a header, the value as earlier
	// builds, which decode it strictly, read it.
	var hdr nats.Header
	if p.Asked != 0 {
		hdr = nats.Header{wire.HeaderAsked: {strconv.FormatUint(p.Asked, 10)}}
	}
	return s.putJSON(ctx, pendingKey(p.Session, p.CallID), hdr, p)
}

// askedHeader is Pending.Asked as a KVStore stores it in the headers h of
// a pending call (wire.HeaderAsked); 0 when absent or not one number.
func askedHeader(h nats.Header) uint64 {
	vs := h.Values(wire.HeaderAsked)
	if len(vs) != 1 {
		return 0
	}
	n, _ := strconv.ParseUint(vs[0], 10, 64)
	return n
}

// FindPending implements Store. Without the approvals bucket (BindOnly
// before any worker made it) it fails saying so: nothing can be pending.
func (s *KVStore) FindPending(ctx context.Context, session, callID string) ([]Pending, error) {
	if s.approvals == nil {
		return nil, errNoApprovals
	}
	if err := checkKeys(session, callID); err != nil {
		return nil, err
	}
	if session != "" {
		var p Pending
		e, err := s.readJSON(ctx, s.approvals, pendingKey(session, callID), &p)
		if err == nil && e.Found && (p.Session != session || p.CallID != callID) {
			err = fmt.Errorf("permission: the pending call under %s is of session %q, call %q: not the key's", pendingKey(session, callID), p.Session, p.CallID)
		}
		if err != nil || !e.Found {
			return nil, err
		}
		p.Revision, p.Asked, p.Stored = e.Revision, askedHeader(e.Header), e.Created
		return []Pending{p}, nil
	}
	id := wire.KeyToken(callID)
	var keys []string
	err := s.watchPending(ctx, []string{"pending.*." + id, "pending.*.*." + id}, true, func() { keys = keys[:0] }, func(e jetstream.KeyValueEntry) bool {
		if !slices.Contains(keys, e.Key()) {
			keys = append(keys, e.Key())
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("permission: listing pending calls: %w", err)
	}
	var out []Pending
	for _, k := range keys {
		var p Pending
		if e, err := s.readJSON(ctx, s.approvals, k, &p); errors.Is(err, ErrUnreadable) {
			continue // not a pending call: not listed
		} else if err != nil {
			return nil, err
		} else if e.Found && k == pendingKey(p.Session, p.CallID) {
			p.Revision, p.Asked, p.Stored = e.Revision, askedHeader(e.Header), e.Created
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Pending) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// ListPending implements Store. It reads the bucket's pending entries in
// the order they were last written (a watch of their latest values), so
// listing a few of a full bucket reads only those.
func (s *KVStore) ListPending(ctx context.Context, session string, limit int) ([]Pending, bool, error) {
	return listPending(ctx, s, session, limit)
}

// walkPending implements pendingWalker: the bucket's pending calls of
// session ("" every session) in the order they were last written, each
// decoded as it is read (a watch of their latest values).
func (s *KVStore) walkPending(ctx context.Context, session string, begin func(), each func(Pending) bool) error {
	if s.approvals == nil {
		return errNoApprovals
	}
	if err := checkKeys(session, ""); err != nil {
		return err
	}
	filter := "pending.>"
	if session != "" {
		filter = "pending." + wire.ScopedKeyToken(session) + ".*"
	}
	err := s.watchPending(ctx, []string{filter}, false, begin, func(e jetstream.KeyValueEntry) bool {
		// A watch's entries come without their headers: a value is a
		// pending call when it decodes as one exactly and is the one its
		// key names (a server's answer a caller had stored there is not).
		var p Pending
		if err := decodeStrict(e.Value(), &p); err != nil || e.Key() != pendingKey(p.Session, p.CallID) {
			return true // not a pending call this build reads: not listed
		}
		if session != "" && p.Session != session {
			return true
		}
		p.Revision, p.Stored = e.Revision(), e.Created()
		return each(p)
	})
	if err != nil {
		return fmt.Errorf("permission: listing pending calls: %w", err)
	}
	return nil
}

// watchPending reads the latest values under filters of the approvals
// bucket, deletions left out (meta: their keys alone), calling each for
// each until it answers false. A watch is made again, after begin, when
// its consumer is not made within kv.ReadTry (the request's answer
// dropped by a stream leader stepping down), when it is refused for a
// moment without a leader (kv.Transient), or when it stops delivering for
// as long, or ends, before its current values are all read: a listing is
// begun again while ctx lasts, never answered partial.
func (s *KVStore) watchPending(ctx context.Context, filters []string, meta bool, begin func(), each func(jetstream.KeyValueEntry) bool) error {
	opts := []jetstream.WatchOpt{jetstream.IgnoreDeletes()}
	if meta {
		opts = append(opts, jetstream.MetaOnly())
	}
	_, err := kv.RetryEach(ctx, s.js, kv.ReadTry, func(context.Context) (struct{}, error) {
		// Not the attempt's context, which would end the watch after
		// kv.ReadTry whatever it delivers: each of its steps is bounded.
		begin()
		return struct{}{}, s.watchOnce(ctx, slices.Clone(filters), opts, each)
	})
	return err
}

// watchOnce is one attempt of watchPending.
func (s *KVStore) watchOnce(ctx context.Context, filters []string, opts []jetstream.WatchOpt, each func(jetstream.KeyValueEntry) bool) error {
	w, stop, err := kv.MakeWatch(ctx, func(ctx context.Context) (jetstream.KeyWatcher, error) {
		return s.approvals.WatchFiltered(ctx, filters, opts...)
	})
	if err != nil {
		return err
	}
	defer stop()
	stall := time.NewTimer(kv.ReadTry)
	defer stall.Stop()
	for {
		stall.Reset(kv.ReadTry)
		select {
		case e, ok := <-w.Updates():
			switch {
			case !ok:
				return errWatchCut
			case e == nil: // the current values are all read
				return nil
			case !each(e):
				return nil
			}
		case <-stall.C:
			return kv.ErrWatchStalled
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// errWatchCut: a watch of the approvals bucket ended before its current
// values were all read.
var errWatchCut = fmt.Errorf("the watch ended before the listing did: %w", nats.ErrTimeout)

// DeletePending implements Store.
func (s *KVStore) DeletePending(ctx context.Context, session, callID string) error {
	if s.approvals == nil {
		return nil
	}
	if err := checkKeys(session, callID); err != nil {
		return err
	}
	_, err := kv.Delete(ctx, s.js, s.approvals.Bucket(), pendingKey(session, callID), 0)
	if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("permission: deleting a pending call: %w", err)
	}
	return nil
}

// restoreWait bounds the restore of a pending call whose approval could
// not be written.
const restoreWait = 5 * time.Second

// ApprovePending implements Store. The approval's key is read first, the
// pending call deleted as of the revision read, then the approval stored
// by compare-and-set on the revision its key had: an approval of the call
// used in between (its delete marker) fails the write, and one used after
// the pending call was recorded refuses it (the call ran since it asked).
func (s *KVStore) ApprovePending(ctx context.Context, p Pending, a Approval) (bool, error) {
	if s.approvals == nil || p.Revision == 0 {
		return false, nil
	}
	if err := checkKeys(p.Session, p.CallID); err != nil {
		return false, err
	}
	if err := checkKeys(a.Session, a.CallID); err != nil {
		return false, err
	}
	key := approvalKey(a.Session, a.CallID)
	val, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	// usedSince: the key's last message, newer than p, may be a use of
	// an approval (a delete; a forged value, which may hide one). The
	// server's marker of an approval expired is none: it was not used.
	usedSince := func(e kv.Entry) bool { return !e.Found && !e.Marked && e.Revision > p.askedAt() }
	e, err := s.get(ctx, key)
	if err != nil && !errors.Is(err, kv.ErrForged) { // a forged value older than p is replaced
		return false, fmt.Errorf("permission: reading an approval: %w", err)
	}
	if usedSince(e) {
		// Answered by that use: not left listed as waiting (a newer ask
		// under the key stays).
		_, _ = kv.Delete(ctx, s.js, s.approvals.Bucket(), pendingKey(p.Session, p.CallID), p.Revision)
		return false, ErrApprovalUsed
	}
	_, err = kv.Delete(ctx, s.js, s.approvals.Bucket(), pendingKey(p.Session, p.CallID), p.Revision)
	switch {
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists):
		return false, nil // approved, or asked again, since it was read
	case err != nil:
		return false, fmt.Errorf("permission: claiming a pending call: %w", err)
	}
	if s.afterClaim != nil {
		s.afterClaim()
	}
	for range maxClaimAttempts {
		if _, err = kv.Update(ctx, s.js, s.approvals.Bucket(), key, val, e.Revision); err == nil {
			return true, nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) && !errors.Is(err, jetstream.ErrKeyExists) {
			break
		}
		// The key changed since it was read: an approval used (the call
		// ran after it asked: nothing left to approve), or another one
		// stored, which this one, of the latest ask, replaces.
		if e, err = s.get(ctx, key); err != nil && !errors.Is(err, kv.ErrForged) {
			break
		}
		if usedSince(e) {
			return false, ErrApprovalUsed // the claimed call is rightly gone
		}
	}
	// Not stored: the call is pending again, as it was, also when ctx
	// ended meanwhile (an approver's Ctrl-C): the ask is not lost. The
	// restored record is a new revision; it keeps the ask's (Asked), so
	// an approval used meanwhile (the write may have failed after one)
	// still answers it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreWait)
	defer cancel()
	p.Asked = p.askedAt()
	if perr := s.PutPending(rctx, p); perr != nil {
		err = errors.Join(err, fmt.Errorf("restoring the pending call: %w", perr))
	}
	return false, fmt.Errorf("permission: writing an approval: %w", err)
}

// get reads key of the approvals bucket with its stored headers
// (kv.Get), in attempts of kv.ReadTry while ctx lasts: an answer a stream
// leader's stepdown dropped is asked again, not waited for until ctx's
// deadline (or js's default timeout, without one). A value a server's
// answer put there is kv.ErrForged, with its entry.
func (s *KVStore) get(ctx context.Context, key string) (kv.Entry, error) {
	return kv.RetryEach(ctx, s.js, kv.ReadTry, func(ctx context.Context) (kv.Entry, error) {
		return kv.Get(ctx, s.js, s.approvals.Bucket(), key)
	})
}

// PutApproval implements Store.
func (s *KVStore) PutApproval(ctx context.Context, a Approval) error {
	if s.approvals == nil {
		return errNoApprovals
	}
	if err := checkKeys(a.Session, a.CallID); err != nil {
		return err
	}
	return s.putJSON(ctx, approvalKey(a.Session, a.CallID), nil, a)
}

// LoadApproval implements Store.
func (s *KVStore) LoadApproval(ctx context.Context, session, callID string) (Approval, bool, error) {
	var a Approval
	if s.approvals == nil {
		return a, false, nil
	}
	if err := checkKeys(session, callID); err != nil {
		return a, false, err
	}
	e, err := s.readJSON(ctx, s.approvals, approvalKey(session, callID), &a)
	if err != nil || !e.Found {
		return Approval{}, false, err
	}
	if a.Session != session || a.CallID != callID {
		return Approval{}, false, fmt.Errorf("permission: the approval under %s is of session %q, call %q: not the key's, and is not used", approvalKey(session, callID), a.Session, a.CallID)
	}
	a.Revision, a.Stored = e.Revision, e.Created
	return a, true, nil
}

// storeNow is the server's time now, as the approvals bucket's stream
// information stamps it (zero from a server before nats-server 2.10,
// which does not): what a Guard ages a record's Stored stamp against
// when its ApprovalTTL is shorter than the bucket's max age. One request
// to the stream leader, made again within ctx while there is none.
func (s *KVStore) storeNow(ctx context.Context) (time.Time, error) {
	if s.approvals == nil {
		return time.Time{}, errNoApprovals
	}
	now, err := kv.RetryEach(ctx, s.js, kv.ReadTry, func(ctx context.Context) (time.Time, error) {
		st, err := s.js.Stream(ctx, "KV_"+s.approvals.Bucket())
		if err != nil {
			return time.Time{}, err
		}
		return st.CachedInfo().TimeStamp, nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("permission: asking the server's time: %w", err)
	}
	return now, nil
}

// ConsumeApproval implements Store.
func (s *KVStore) ConsumeApproval(ctx context.Context, a Approval) (bool, error) {
	if s.approvals == nil {
		return false, nil
	}
	if err := checkKeys(a.Session, a.CallID); err != nil {
		return false, err
	}
	// Its own delete, stored but unanswered, is told from another's
	// (kv.Write): an approval is used once.
	_, err := kv.Delete(ctx, s.js, s.approvals.Bucket(), approvalKey(a.Session, a.CallID), a.Revision)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists):
		return false, nil
	}
	return false, fmt.Errorf("permission: consuming an approval: %w", err)
}

// unreadableError is a stored value readJSON refuses: a server's answer a
// caller had stored under the key (kv.ErrForged), or a value that is not
// exactly the JSON this build writes there. rev is its revision, so a
// writer can replace it by compare-and-set.
type unreadableError struct {
	key string
	rev uint64
	err error
}

func (e *unreadableError) Error() string {
	return fmt.Sprintf("permission: the value under %s (revision %d) is refused: %v", e.key, e.rev, e.err)
}

func (e *unreadableError) Unwrap() error { return e.err }

func (e *unreadableError) Is(target error) bool { return target == ErrUnreadable }

// ErrUnreadable marks a stored policy, pending call or approval that a
// KVStore refuses to read: a server's answer a client had stored under
// its key (NATS does not check a request's reply subject), or a value that
// is not exactly what toolbus writes there. A policy so refused makes the
// session's calls fail (unavailable) until the operator sets it again; an
// approval so refused is no approval.
var ErrUnreadable = errors.New("permission: the stored value was not written by toolbus")

// readJSON reads key into v, answering with the entry read (its
// Revision, its server stamp Created and its stored Header; Found false
// when the key is absent). The value is read with its stored headers
// (kv.Get) and decoded strictly (decodeStrict): NATS does not check a
// request's reply subject, so any client may have the server store its
// answer to a request of its own under any key (subjects.md: Permission
// state). Such a value is an error (*unreadableError), never a policy, a
// pending call, an approval or their absence: a policy that cannot be
// trusted must not read as a looser one.
func (s *KVStore) readJSON(ctx context.Context, b jetstream.KeyValue, key string, v any) (kv.Entry, error) {
	// A cluster without a leader for the moment (an election, nodes
	// restarting) is waited out within ctx, as the group state's reads do,
	// in attempts of kv.ReadTry (an answer a stepdown dropped is asked
	// again, not waited for);
	// a bucket deleted since it was bound fails the same way (no
	// responders) and is asked about once (kv.Gone), so it fails at once
	// rather than for as long as ctx lasts.
	asked := false
	e, err := kv.RetryEach(ctx, s.js, kv.ReadTry, func(ctx context.Context) (kv.Entry, error) {
		e, err := kv.Get(ctx, s.js, b.Bucket(), key)
		if !asked && (errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)) {
			asked = true
			if kv.GoneFrom(ctx, s.js, b, err) {
				return e, fmt.Errorf("%w (%v)", jetstream.ErrBucketNotFound, err)
			}
		}
		return e, err
	})
	switch {
	case errors.Is(err, kv.ErrForged):
		return kv.Entry{}, &unreadableError{key: key, rev: e.Revision, err: err}
	case err != nil:
		return kv.Entry{}, fmt.Errorf("permission: reading %s: %w", strings.SplitN(key, ".", 2)[0], err)
	case !e.Found:
		return kv.Entry{}, nil
	}
	if err := decodeStrict(e.Value, v); err != nil {
		return kv.Entry{}, &unreadableError{key: key, rev: e.Revision, err: fmt.Errorf("decoding it: %w", err)}
	}
	return e, nil
}

// decodeStrict decodes one JSON object into v and refuses fields v does
// not have: the server's JSON answers (API responses, acknowledgements)
// have fields no policy, pending call or approval has.
func decodeStrict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

// putJSON stores v under key of the approvals bucket, with headers hdr
// (none: a value as KeyValue.Put stores it).
func (s *KVStore) putJSON(ctx context.Context, key string, hdr nats.Header, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := kv.Write(ctx, s.js, s.approvals.Bucket(), key, hdr, b); err != nil {
		return fmt.Errorf("permission: writing %s: %w", strings.SplitN(key, ".", 2)[0], err)
	}
	return nil
}
