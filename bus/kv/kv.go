// Package kv holds what the fleet's JetStream KV stores share: opening a
// bucket the same way everywhere, and telling a moment without a stream
// leader from a real failure. The group state (bus.KVState) and the
// permission store (permission.KVStore) are built on it; session keys are
// wire.SessionKey.
//
//	b, err := kv.Open(ctx, js, jetstream.KeyValueConfig{Bucket: wire.BucketGroups, History: 1})
package kv

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// Open binds the bucket cfg names, creating it with cfg when it does not
// exist. An existing bucket is bound as it is: a worker never changes the
// configuration of a bucket the fleet shares (workers with different
// settings would otherwise undo each other), so the first one to create
// it decides. Two workers creating it at once both end up bound to it.
func Open(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return OpenBounded(ctx, js, cfg, 0)
}

// OpenBounded is Open for a bucket that, when it creates it, holds at
// most maxEntries keys (its stream's MaxMsgs, which KeyValueConfig
// lacks; ≤ 0: no bound). Past it a new key is refused (Full) until
// entries expire; a key already there may still be rewritten. A bound in
// entries, not bytes: JetStream reserves a stream's MaxBytes from the
// server's store when it is made (a server with less room refuses the
// bucket), a count reserves nothing.
func OpenBounded(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, maxEntries int64) (jetstream.KeyValue, error) {
	if err := Check(cfg); err != nil {
		return nil, err
	}
	b, err := Retry(ctx, js, func(ctx context.Context) (jetstream.KeyValue, error) {
		b, err := js.KeyValue(ctx, cfg.Bucket)
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return b, err
		}
		if sc, ok := streamConfig(cfg, maxEntries); ok {
			// Made as its stream, bound and all: a role may make a
			// bucket's stream without being let change it afterwards.
			_, err = js.CreateStream(ctx, sc)
			if err == nil || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) { // or made concurrently
				return js.KeyValue(ctx, cfg.Bucket)
			}
			return nil, err
		}
		b, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) { // created concurrently
			return js.KeyValue(ctx, cfg.Bucket)
		}
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("kv: binding bucket %q: %w", cfg.Bucket, err)
	}
	return b, nil
}

// attemptTimeout bounds one attempt of Retry: a JetStream request sent
// while the cluster has no leader for it is answered by nobody, and
// waits out its whole context unless bounded.
const attemptTimeout = 5 * time.Second

// ReadTry bounds one attempt at a read (RetryEach): the bucket's stream
// leader stepping down may drop the answer to a request on its way, which
// would otherwise be waited for until the caller's deadline, or 5 s
// (Retry's attempt, the js default timeout) past a call's deadline of a
// few seconds.
const ReadTry = time.Second

// Retry runs op until it succeeds, fails for good, or ctx ends: a cluster
// without a leader for the moment (an election, nodes restarting) fails
// it (Transient), or leaves an attempt unanswered, and is retried after
// a pause. Without JetStream at all (NoJetStream) it fails at once. Each
// attempt may last 5 s: for binding and creating buckets; a read is
// RetryEach with ReadTry.
func Retry[T any](ctx context.Context, js jetstream.JetStream, op func(context.Context) (T, error)) (T, error) {
	return RetryEach(ctx, js, attemptTimeout, op)
}

// RetryEach is Retry with each attempt bounded by try.
func RetryEach[T any](ctx context.Context, js jetstream.JetStream, try time.Duration, op func(context.Context) (T, error)) (T, error) {
	wait := 100 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, try)
		v, err := op(actx)
		cancel()
		switch {
		case err == nil, ctx.Err() != nil:
			return v, err
		case errors.Is(err, context.DeadlineExceeded): // the attempt's own bound
		case !Transient(err) || NoJetStream(ctx, js, err):
			return v, err
		}
		if serr := Sleep(ctx, wait); serr != nil {
			return v, fmt.Errorf("%w (last error: %v)", serr, err)
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// ErrWatchStalled is a watch not made, or not delivering, within
// ReadTry: its consumer's answer dropped by a stream leader stepping
// down, or asked for while the cluster had no leader. It is Transient.
var ErrWatchStalled = fmt.Errorf("kv: the watch stalled (no leader for the moment?): %w", nats.ErrTimeout)

// MakeWatch makes a watch with mk, waiting ReadTry at most: the context
// a KV watch is made with also ends its subscription, so its making
// cannot be bounded by it, and a consumer's answer never sent would be
// waited for as long as the watch was to last. stop ends the watch, and
// reads what it still delivers (its subscription's handler waits to hand
// each value over, and would wait for good on a watch left unread).
func MakeWatch(ctx context.Context, mk func(context.Context) (jetstream.KeyWatcher, error)) (w jetstream.KeyWatcher, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	type made struct {
		w   jetstream.KeyWatcher
		err error
	}
	madeC := make(chan made, 1)
	go func() {
		w, err := mk(ctx)
		madeC <- made{w, err}
	}()
	t := time.NewTimer(ReadTry)
	defer t.Stop()
	select {
	case m := <-madeC:
		if m.err != nil {
			cancel()
			return nil, nil, m.err
		}
		return m.w, func() { cancel(); drain(m.w) }, nil
	case <-t.C:
		cancel()
		go func() {
			if m := <-madeC; m.w != nil {
				drain(m.w)
			}
		}()
		return nil, nil, ErrWatchStalled
	}
}

// drain stops w and reads what it delivers until it ends.
func drain(w jetstream.KeyWatcher) {
	_ = w.Stop()
	go func() {
		t := time.NewTimer(time.Minute)
		defer t.Stop()
		for {
			select {
			case _, ok := <-w.Updates():
				if !ok {
					return
				}
			case <-t.C: // its end never told (nats.go's closed handler)
				return
			}
		}
	}()
}

// streamConfig is the stream of the bucket cfg with at most maxEntries
// keys, as jetstream.CreateKeyValue makes a bucket's stream (its MaxMsgs
// aside: TestStreamConfigIsTheBuckets); false without a bound, or for a
// bucket of mirrors, sources, republishing, metadata or marker TTLs,
// which CreateKeyValue makes (unbounded).
func streamConfig(cfg jetstream.KeyValueConfig, maxEntries int64) (jetstream.StreamConfig, bool) {
	if maxEntries <= 0 || cfg.Mirror != nil || len(cfg.Sources) > 0 || cfg.RePublish != nil || cfg.LimitMarkerTTL != 0 || len(cfg.Metadata) > 0 {
		return jetstream.StreamConfig{}, false
	}
	history := int64(max(cfg.History, 1))
	dup := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < dup {
		dup = cfg.TTL
	}
	var compression jetstream.StoreCompression
	if cfg.Compression {
		compression = jetstream.S2Compression
	}
	return jetstream.StreamConfig{
		Name:              "KV_" + cfg.Bucket,
		Description:       cfg.Description,
		Subjects:          []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: history,
		MaxBytes:          cmp.Or(cfg.MaxBytes, -1),
		MaxAge:            cfg.TTL,
		MaxMsgSize:        cmp.Or(cfg.MaxValueSize, -1),
		Storage:           cfg.Storage,
		Replicas:          max(cfg.Replicas, 1),
		Placement:         cfg.Placement,
		AllowRollup:       true,
		DenyDelete:        true,
		Duplicates:        dup,
		MaxMsgs:           maxEntries,
		MaxConsumers:      -1,
		AllowDirect:       true,
		Compression:       compression,
		Discard:           jetstream.DiscardNew,
	}, true
}

// Bind binds an existing bucket for reading; it returns nil, nil when the
// bucket does not exist, also for want of JetStream (NoJetStream).
func Bind(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	b, err := Retry(ctx, js, func(ctx context.Context) (jetstream.KeyValue, error) { return js.KeyValue(ctx, bucket) })
	if errors.Is(err, jetstream.ErrBucketNotFound) || NoJetStream(ctx, js, err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kv: binding bucket %q: %w", bucket, err)
	}
	return b, nil
}

// Check validates what Open would create: a bucket name of
// [A-Za-z0-9_-], 1 to 5 replicas (0 means 1), no negative TTL.
func Check(cfg jetstream.KeyValueConfig) error {
	switch {
	case !toolkit.ValidName(cfg.Bucket):
		return fmt.Errorf("kv: invalid bucket name %q: must match [A-Za-z0-9_-]+", cfg.Bucket)
	case cfg.Replicas < 0 || cfg.Replicas > 5:
		return fmt.Errorf("kv: bucket %q: replicas must be 1 to 5, got %d", cfg.Bucket, cfg.Replicas)
	case cfg.TTL < 0:
		return fmt.Errorf("kv: bucket %q: negative TTL %v", cfg.Bucket, cfg.TTL)
	}
	return nil
}

// Transient reports errors worth retrying until a deadline: JetStream
// without a leader for the moment (an election, a bucket just created).
// A full bucket (Full) is not one. The API errors of nats.go's older
// JetStream (a KV watch's consumer, made by it) count as jetstream's,
// but for an account without JetStream.
func Transient(err error) bool {
	var apiErr *jetstream.APIError
	var legacy *nats.APIError
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || (errors.As(err, &apiErr) && (apiErr.Code == 503 && !Full(err) || apiErr.ErrorCode == errCodeStreamOffline)) ||
		(errors.As(err, &legacy) && (legacy.Code == 503 || legacy.ErrorCode == errCodeStreamOffline) &&
			legacy.ErrorCode != nats.JSErrCodeJetStreamNotEnabled && legacy.ErrorCode != nats.JSErrCodeJetStreamNotEnabledForAccount)
}

// errCodeStreamOffline is JetStream's error code for a stream whose
// replicas are not running for the moment (JSStreamOfflineErr): placed on
// a node that is down, or the meta leader changing.
const errCodeStreamOffline = 10118

// errCodeStoreFailed is JetStream's error code for a write the stream's
// store refused (JSStreamStoreFailedF), its description the reason.
const errCodeStoreFailed = 10077

// Full reports a write refused because the bucket is at its bound
// (MaxBytes, or MaxMsgs): it stays refused until entries expire, so it
// is no moment to ride out.
func Full(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeStoreFailed &&
		(strings.Contains(apiErr.Description, "maximum bytes exceeded") || strings.Contains(apiErr.Description, "maximum messages exceeded"))
}

// Gone reports whether err, from a request to bucket, came from its
// stream not existing (deleted since it was bound: nats kv rm, a
// JetStream reset) rather than from a moment without a leader, which
// fails the same way (no responders). It asks for the stream, briefly:
// during an election the answer may be slow, and the caller's retries
// go on meanwhile.
func Gone(ctx context.Context, js jetstream.JetStream, bucket string, err error) bool {
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return true
	case !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse):
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, err = js.Stream(ctx, "KV_"+bucket)
	return errors.Is(err, jetstream.ErrStreamNotFound)
}

// NoJetStream reports whether err, from a JetStream request, means that
// the account has no JetStream at all (the server runs without it, or
// the account is not enabled for it). A stream without a leader for the
// moment fails the same way (no responders), so that case is told apart
// by asking $JS.API.INFO, which every server with JetStream answers.
func NoJetStream(ctx context.Context, js jetstream.JetStream, err error) bool {
	switch {
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return true
	case !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, jetstream.ErrNoStreamResponse):
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = js.AccountInfo(ctx)
	return errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount)
}

// Sleep waits for d or until ctx is done.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Entry is a key's last value as Get (any replica) or LeaderGet (the
// stream leader) read it.
type Entry struct {
	Value    []byte
	Revision uint64    // the message's sequence; that of a delete too
	Created  time.Time // when it was written
	Found    bool      // false: no value (never written, deleted, purged)
	// Marked: Found is false because of the server's limit marker (the
	// key expired or was removed, in a bucket made with limit markers),
	// not a delete or purge a client wrote.
	Marked bool
	// Header is the message's stored headers (a found value's, and from
	// LeaderGet a deletion's too), with the server's Nats-* of a direct
	// get after them from Get, alone from LeaderGet; nil when the
	// message has none.
	Header nats.Header
}

// LeaderGet reads key's last value through the bucket's stream leader
// (STREAM.MSG.GET): a direct get may be answered by a replica that has
// not seen the latest write yet.
func LeaderGet(ctx context.Context, js jetstream.JetStream, bucket, key string) (Entry, error) {
	req, err := json.Marshal(map[string]string{"last_by_subj": "$KV." + bucket + "." + key})
	if err != nil {
		return Entry{}, err
	}
	ctx, cancel := bounded(ctx, js)
	defer cancel()
	msg, err := js.Conn().RequestWithContext(ctx, apiPrefix(js.Options())+"STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return Entry{}, err
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Seq    uint64    `json:"seq"`
			Header []byte    `json:"hdrs"`
			Data   []byte    `json:"data"`
			Time   time.Time `json:"time"`
		} `json:"message"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return Entry{}, fmt.Errorf("decoding the stream leader's answer: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound:
		return Entry{}, nil
	case resp.Error != nil:
		return Entry{}, resp.Error
	case resp.Message == nil:
		return Entry{}, errors.New("the stream leader's answer has no message")
	}
	m := resp.Message
	var hdr nats.Header
	if len(m.Header) > 0 {
		if hdr, err = nats.DecodeHeadersMsg(m.Header); err != nil {
			return Entry{}, fmt.Errorf("decoding the stream leader's answer: %w", err)
		}
		if why := forged(hdr, 0); why != "" {
			return Entry{Revision: m.Seq, Created: m.Time}, fmt.Errorf("%w: $KV.%s.%s revision %d: %s", ErrForged, bucket, key, m.Seq, why)
		}
		if deleted(hdr) {
			return Entry{Revision: m.Seq, Created: m.Time, Marked: marked(hdr), Header: hdr}, nil
		}
	}
	return Entry{Value: m.Data, Revision: m.Seq, Created: m.Time, Found: true, Header: hdr}, nil
}

// CASStored reports whether a value read with its stored headers h
// (Entry.Header) was stored by a compare-and-set (KeyValue.Create or
// Update): the stored message keeps the expected revision's header
// (Nats-Expected-Last-Subject-Sequence). A direct get asked with no_hdr
// answers with a value alone, so a copy of one that a caller had stored
// under a key (a request's reply subject) has no header at all; a copy
// with headers is refused before (ErrForged).
func CASStored(h nats.Header) bool {
	return len(h.Values(jetstream.ExpectedLastSubjSeqHeader)) == 1
}

// ErrForged marks a value that no toolbus writer stored: an answer the
// server published on a client's behalf. NATS does not check a
// request's reply subject, and JetStream answers from inside the account,
// where no role's permissions apply, so any client may have the server
// answer a request of its own (an API response, a publish's
// acknowledgement, a direct get's 404, a copy of a message it may read, a
// consumer's delivery or heartbeat) on $KV.<bucket>.<key>, which the
// bucket then stores as that key's value. A reader must not take such a
// value for the key's own: it is an error, never "absent" nor a value.
var ErrForged = errors.New("kv: the value is a server's answer sent to the key as a request's reply subject, not written by toolbus")

// serverHeaders are the headers the server puts on its own answers and
// deliveries (a direct get's, a consumer's delivery, heartbeat or flow
// control), which no toolbus writer sets on a value: a stored value
// carrying one is a server's answer, stored.
var serverHeaders = []string{
	jetstream.StreamHeader, jetstream.SubjectHeader, jetstream.SequenceHeader, jetstream.TimeStampHeaer,
	"Nats-Last-Sequence", "Nats-Num-Pending", "Nats-Last-Consumer", "Nats-Last-Stream",
	"Nats-Consumer-Stalled", "Nats-Pending-Messages", "Nats-Pending-Bytes", "Nats-Msg-Size",
	"Status", "Description",
}

// forged reports why a stored message with headers h is a server's
// answer, or "" when it may be a value a toolbus writer stored. h are the
// stored headers, less appended: the number of values of each server
// header a direct get adds to the stored ones (1) or not (0).
func forged(h nats.Header, appended int) string {
	counts := make(map[string]int, len(h))
	for k, vs := range h {
		for _, name := range serverHeaders {
			if strings.EqualFold(k, name) {
				counts[name] += len(vs)
			}
		}
	}
	for _, name := range serverHeaders {
		n := counts[name]
		switch name {
		case jetstream.StreamHeader, jetstream.SubjectHeader, jetstream.SequenceHeader, jetstream.TimeStampHeaer:
			n -= appended
		}
		if n > 0 {
			return "it carries the server's header " + name
		}
	}
	return ""
}

// Get reads key's last value with a direct get
// ($JS.API.DIRECT.GET.KV_<bucket>.$KV.<bucket>.<key>, empty body; any
// replica may answer), as jetstream's KeyValue.Get does, but with the
// stored message's headers, which KeyValue.Get drops. A value that a
// server's answer put there (ErrForged) is an error naming the key,
// with the entry's Revision and Created set so a writer can replace it
// by compare-and-set. A server's status answer (a 404) is stored
// without its status line, as an empty message with no headers: it is
// Found, with an empty value (which no toolbus value is), never a
// missing key. A key never written, deleted or purged (or expired, with
// a limit marker) is Found false. A ctx without a deadline is bounded by
// js's default timeout, as KeyValue.Get's is.
func Get(ctx context.Context, js jetstream.JetStream, bucket, key string) (Entry, error) {
	subject := "$KV." + bucket + "." + key
	ctx, cancel := bounded(ctx, js)
	defer cancel()
	msg, err := js.Conn().RequestWithContext(ctx, apiPrefix(js.Options())+"DIRECT.GET.KV_"+bucket+"."+subject, nil)
	if err != nil {
		return Entry{}, err
	}
	seqs := msg.Header.Values(jetstream.SequenceHeader)
	if len(seqs) == 0 {
		// No message: the server's own status answer.
		switch status := msg.Header.Get("Status"); status {
		case "404":
			return Entry{}, nil
		case "":
			return Entry{}, fmt.Errorf("kv: the direct get of %s answered without a sequence", subject)
		default:
			return Entry{}, fmt.Errorf("kv: the direct get of %s: status %s %s", subject, status, msg.Header.Get("Description"))
		}
	}
	// The server appends its headers to the stored ones: its values are
	// the last.
	seq, err := strconv.ParseUint(seqs[len(seqs)-1], 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("kv: the direct get of %s: sequence %q: %w", subject, seqs[len(seqs)-1], err)
	}
	var created time.Time
	if ts := msg.Header.Values(jetstream.TimeStampHeaer); len(ts) > 0 {
		created, _ = time.Parse(time.RFC3339Nano, ts[len(ts)-1])
	}
	e := Entry{Revision: seq, Created: created}
	if why := forged(msg.Header, 1); why != "" {
		return e, fmt.Errorf("%w: %s revision %d: %s", ErrForged, subject, seq, why)
	}
	if deleted(msg.Header) {
		e.Marked = marked(msg.Header)
		return e, nil
	}
	e.Value, e.Found, e.Header = msg.Data, true, msg.Header
	return e, nil
}

// bounded is ctx, bounded by js's default timeout when it has no
// deadline, as jetstream's own requests are: a request nobody answers (a
// stream leader lost while it was on its way) would wait for good.
func bounded(ctx context.Context, js jetstream.JetStream) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, cmp.Or(js.Options().DefaultTimeout, 5*time.Second))
}

// deleted reports whether a stored message with headers h is a key's
// deletion, as KeyValue.Get reads one: a delete or purge marker, or the
// server's marker of a key expired or removed (Nats-Marker-Reason, in a
// bucket made with limit markers).
func deleted(h nats.Header) bool {
	op := h.Get(wire.HeaderKVOperation)
	return op == "DEL" || op == "PURGE" || marked(h)
}

// marked reports whether a stored message with headers h is the server's
// marker of a key expired or removed (Nats-Marker-Reason).
func marked(h nats.Header) bool {
	return h.Get(wire.HeaderKVOperation) == "" && h.Get(jetstream.MarkerReasonHeader) != ""
}

// APIPrefix is the JetStream API prefix js sends its requests under,
// with a trailing dot: for requests jetstream has no call for.
func APIPrefix(js jetstream.JetStream) string { return apiPrefix(js.Options()) }

// apiPrefix is the JetStream API prefix of options o, with a trailing dot.
func apiPrefix(o jetstream.JetStreamOptions) string {
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}
