package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/toolkit"
)

// Kept results (subjects.md: Kept results). A call sent with
// ToolCall.KeepResult has its final stored by the worker that ran it, in
// the results bucket, under its call id, so that a caller that lost its
// connection (or its process) fetches it with Client.Result.

// DefaultResultTTL is how long a kept result can be fetched.
const DefaultResultTTL = time.Hour

// ResultsOptions turn kept results on (WorkerOptions.Results).
type ResultsOptions struct {
	// JetStream is where the results bucket lives; required.
	JetStream jetstream.JetStream
	// TTL is how long a kept result can be fetched, set when the bucket is
	// created. Default DefaultResultTTL.
	TTL time.Duration
	// Replicas of the bucket when this worker creates it. Default 1.
	Replicas int
}

// ResultsMaxBytes bounds the results bucket: it lives in the servers'
// memory, and every durable call writes to it. A full bucket keeps nothing
// more until older results expire; calls are answered as usual.
const ResultsMaxBytes = 256 << 20

// ResultsBucketConfig is the results bucket as whoever creates it first
// creates it: in memory storage (a durable call's final is written to it
// with every call, and on file storage that write cost a fifth of the
// durable path's throughput), at most ResultsMaxBytes.
func ResultsBucketConfig(ttl time.Duration, replicas int) jetstream.KeyValueConfig {
	if ttl <= 0 {
		ttl = DefaultResultTTL
	}
	return jetstream.KeyValueConfig{Bucket: wire.BucketResults, Description: "toolbus: kept finals by call id",
		History: 1, TTL: ttl, Replicas: max(replicas, 1), Storage: jetstream.MemoryStorage, MaxBytes: ResultsMaxBytes}
}

type results struct {
	kv jetstream.KeyValue
	js jetstream.JetStream // to read a kept final with its headers (readKept)
	// now is the worker's clock (a test's, off the server's), the one
	// a call's start (keepLatest's started) is read on.
	now func() time.Time
}

func openResults(ctx context.Context, o *ResultsOptions) (*results, error) {
	if o.JetStream == nil {
		return nil, errors.New("bus: ResultsOptions.JetStream is required")
	}
	b, err := kv.Open(ctx, o.JetStream, ResultsBucketConfig(o.TTL, o.Replicas))
	if err != nil {
		return nil, fmt.Errorf("bus: the results bucket: %w", err)
	}
	return &results{kv: b, js: o.JetStream, now: time.Now}, nil
}

// keep stores a call's final, whole (its content even when it was
// streamed) and with the worker's metadata; a failure is logged, the call
// answered as usual. With wait, it waits for the bucket's answer;
// without, the final is published on nc and not waited for (an abandoned
// call's final over its read-first write). A durable call's final is
// written by keepThenAck, which acknowledges the call once the bucket
// has it.
//
// With expect, the final is kept only over that revision of key (none: 0),
// and a waited-for write reports conflict when the key has another (one
// not waited for is refused unheard); a waited-for write returns its own
// revision (0 otherwise). A waited-for write is kv.Write's, for up to
// 5 s: one refused while another write of the key is in process at a
// replicated bucket's leader (10164) is made again, not taken for a
// conflict (the other may never be stored). of is written beside the
// final (keptOf).
func (r *results) keep(nc *nats.Conn, wait bool, key, id string, resp *toolkit.Response, meta *wire.MetaEntry, log *slog.Logger, failed *atomic.Uint64, expect *uint64, of keptOf) (rev uint64, conflict bool) {
	eb := getBuf()
	defer putBuf(eb)
	msg, over, err := r.keptFinalIn(nc, eb.b[:0], key, id, resp, meta, of)
	if err == nil {
		eb.b = msg.Data
		if over > 0 {
			tooLargeToKeep(log, failed, nc, id, over)
		}
		if expect != nil {
			msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(*expect, 10))
		}
	}
	switch {
	case err != nil:
	case wait:
		// kv.Write: a write refused while another write of the key is in
		// process at a replicated bucket's leader (10164) is no conflict,
		// and is made again while ctx lasts; one unanswered is told.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		rev, err = kv.Write(ctx, r.js, r.kv.Bucket(), key, msg.Header, msg.Data)
		cancel()
	default:
		err = nc.PublishMsg(msg)
	}
	switch {
	case err == nil:
	case expect != nil && errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return 0, true
	case errors.Is(err, nats.ErrMaxPayload):
		// Past keptFinalIn's room for the headers (a server with a
		// smaller max_payload since): nothing to try again.
		failed.Add(1)
		log.Warn("bus: could not keep a call's result: its kept message is larger than the server's max_payload",
			"call", id, "bytes", len(msg.Data), "max_payload", nc.MaxPayload())
	default:
		failed.Add(1)
		log.Warn("bus: could not keep a call's result", "call", id, "err", err)
	}
	return rev, false
}

// keptFinalMsg is the message keeping resp, the final of call id, under
// key, as keep writes it, in a buffer of its own (written later); a
// final too large to keep is logged (keptFinalIn).
func (r *results) keptFinalMsg(nc *nats.Conn, key, id string, resp *toolkit.Response, meta *wire.MetaEntry, of keptOf, log *slog.Logger, failed *atomic.Uint64) (*nats.Msg, error) {
	msg, over, err := r.keptFinalIn(nc, nil, key, id, resp, meta, of)
	if over > 0 {
		tooLargeToKeep(log, failed, nc, id, over)
	}
	return msg, err
}

// keptRoom is what keptFinalIn leaves of nc's max_payload for the kept
// message's headers (the wire version, keptOf's, a compare-and-set's
// and kv.Write's: well under it).
const keptRoom = 1 << 10

// keptFinalIn is keptFinalMsg's message with its body appended to buf.
// A final that would make a message larger than nc's max_payload (less
// keptRoom) cannot be kept (a KV value is one message; its caller gets
// it split into chunks): no write of it would ever be taken, and a
// durable call would wait for one and be delivered again, its tool run
// again. The final kept instead says how the call ended and that its
// result was too large to keep (tooLargeFinal); over is the size of the
// final it replaced (0: none).
func (r *results) keptFinalIn(nc *nats.Conn, buf []byte, key, id string, resp *toolkit.Response, meta *wire.MetaEntry, of keptOf) (msg *nats.Msg, over int, err error) {
	kept := *resp
	kept.ID = id
	// The worker's metadata is written beside the response's own, as in
	// the final sent (AppendFrame), without copying the response's map.
	data, err := wire.AppendFrame(buf, &wire.Frame{Kind: wire.KindFinal, ID: id, Seq: 1, Final: &kept}, meta)
	if err != nil {
		return nil, 0, err
	}
	if nc != nil && int64(len(data))+keptRoom > nc.MaxPayload() {
		over = len(data)
		if data, err = wire.AppendFrame(data[:0], &wire.Frame{Kind: wire.KindFinal, ID: id, Seq: 1, Final: tooLargeFinal(id, resp, over, nc.MaxPayload())}, meta); err != nil {
			return nil, 0, err
		}
	}
	msg = keptMsg(r.kv.Bucket(), key, data)
	if of.attempt > 0 {
		msg.Header.Set(wire.HeaderAttempt, strconv.FormatUint(of.attempt, 10))
	}
	if of.reply != "" {
		msg.Header.Set(wire.HeaderReply, of.reply)
	}
	if of.ran {
		msg.Header.Set(wire.HeaderRan, "1")
	}
	return msg, over, nil
}

// tooLargeFinal is the final kept for call id in place of resp, whose
// kept message would have been size bytes, over maxPayload: code
// internal (a frame that could not be delivered), saying how the call
// ended, so that a caller reading it back is told that, rather than
// not_found, and does not send the call again.
func tooLargeFinal(id string, resp *toolkit.Response, size int, maxPayload int64) *toolkit.Response {
	ended := string(resp.State)
	if resp.Code != "" {
		ended += " (" + string(resp.Code) + ")"
	}
	return toolkit.Final(id, toolkit.CodeInternal, fmt.Sprintf(
		"ResultTooLargeError: call '%s' ended %s, but its final (%d bytes) is larger than the server's max_payload (%d bytes) lets a result be kept: it was sent to its caller, in chunks, and is not kept.",
		id, ended, size, maxPayload))
}

// tooLargeToKeep logs (and counts in failed) a final of call id that was
// not kept for its size (keptFinalIn).
func tooLargeToKeep(log *slog.Logger, failed *atomic.Uint64, nc *nats.Conn, id string, size int) {
	failed.Add(1)
	log.Warn("bus: could not keep a call's result: the final is larger than the server's max_payload; kept instead is a final saying so (Client.Result answers internal, ResultTooLargeError)",
		"call", id, "bytes", size, "max_payload", nc.MaxPayload())
}

// keepLatest keeps the final of attempt n (of.attempt) of a core call
// (ToolCall.KeepResult; 1 as its caller sent it, n its client's nth
// sending, keptAttempt) unless a later attempt kept its own: it reads the kept
// final through the stream leader and writes over exactly the revision
// read, reading again when another write came between. A caller that
// sent a call again got the final of its latest attempt, so that one is
// kept, whichever attempt ends last (an earlier one may run on, cut off,
// and end after it). A later attempt's final stored before this attempt
// was taken (started, on r.now's clock; storedSince) is an earlier call's
// under the same id, and is written over. A key it cannot read is not written (that may be over a
// later attempt's): the final is then not kept, and the failure logged.
// It returns the revision it wrote (0: none), and ok false when the final
// could not be kept (rather than left under a later attempt's). of is
// written beside the final (keep).
func (r *results) keepLatest(nc *nats.Conn, key, id string, resp *toolkit.Response, meta *wire.MetaEntry, log *slog.Logger, failed *atomic.Uint64, started time.Time, of keptOf) (rev uint64, ok bool) {
	var err error
	for tries, unread := 0, 0; tries < 8 && unread < 3; tries++ {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var e kv.Entry
		e, err = kv.LeaderGet(ctx, r.js, r.kv.Bucket(), key)
		cancel()
		switch {
		case err == nil && e.Found && keptAttemptOf(e.Header) > of.attempt:
			var since bool
			if since, err = r.storedSince(e.Created, started); err != nil {
				unread++
				time.Sleep(time.Duration(unread) * 100 * time.Millisecond)
				continue
			}
			if since {
				log.Info("bus: a later attempt of the call kept its final; this attempt's is not kept", "call", id, "attempt", of.attempt)
				return 0, true
			}
		case err != nil && !errors.Is(err, kv.ErrForged): // a forged value's attempt is not read
			// Unread (the bucket's leader is away): not written blindly,
			// over what may be a later attempt's.
			unread++
			time.Sleep(time.Duration(unread) * 100 * time.Millisecond)
			continue
		}
		rev, conflict := r.keep(nc, true, key, id, resp, meta, log, failed, &e.Revision, of)
		if !conflict {
			return rev, rev > 0 // 0: refused or unanswered, logged
		}
		err = errors.New("its key kept changing")
	}
	failed.Add(1)
	log.Warn("bus: could not keep a call's result", "call", id, "err", err)
	return 0, false
}

// storedSince reports whether a kept final that the server stamped
// created was stored after the worker took the call (at started, on its
// own clock). The server's stamp is never compared with the worker's
// clock, which may be off it by minutes (a VM's): ages are compared, the
// final's on the server's clock (a fresh stamp of the server's, the
// results stream's information answered, less created) and the call's on
// the worker's (its clock as it asked, less started). The server stamps
// its answer after the worker asked, so a final stored before the call
// began is always found older than the call (an earlier call's under a
// reused id, written over however recently it was kept); one stored
// after it is found younger unless it was stored within the answer's
// time of the call's start (a later attempt's comes a stall timeout or
// more after). Every final is taken as stored after it when the server
// stamps no answer (before nats-server 2.10). An error: the server could
// not be asked.
func (r *results) storedSince(created, started time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	asked := r.now()
	st, err := r.js.Stream(ctx, "KV_"+r.kv.Bucket())
	if err != nil {
		return false, fmt.Errorf("asking the server's time: %w", err)
	}
	at := st.CachedInfo().TimeStamp
	return at.IsZero() || at.Sub(created) < asked.Sub(started), nil
}

// keptAttemptOf is the attempt a kept final is of (wire.HeaderAttempt);
// 0 when it does not say (a durable call's, or an earlier build's).
func keptAttemptOf(h nats.Header) uint64 {
	n, _ := strconv.ParseUint(h.Get(wire.HeaderAttempt), 10, 32)
	return n
}

// keptAttempt is which attempt of its call a core call that keeps its
// final is: 1 as its caller sent it (its id is the one kept under), n for
// its client's nth sending (the id it was given, attemptID: "-rN" after
// the caller's id).
func keptAttempt(id, keepID string) uint64 {
	i := strings.LastIndex(id, "-r")
	if id == keepID || i < 0 {
		return 1
	}
	n, err := strconv.ParseUint(id[i+2:], 10, 32)
	if err != nil || n < 2 {
		return 1
	}
	return n
}

// keptMsg is the message that keeps a final (data) under key in bucket:
// with the wire version, which readKept requires. A direct get asked with
// no_hdr answers with a stored value alone, and a caller can have it
// stored under any key as a request's reply subject: a copy of a final
// of its own kept without headers over another identity's under the same
// call id would read as that identity's.
func keptMsg(bucket, key string, data []byte) *nats.Msg {
	return versionedMsg("$KV."+bucket+"."+key, data)
}

// Result fetches the kept final of the client's call id (one sent with
// ToolCall.KeepResult, or on the durable path), as Invoke would have
// returned it. A call whose result is not kept (it was not asked to be,
// has not ended, or its TTL passed) gets a not_found final saying so.
func (c *Client) Result(ctx context.Context, id string) *toolkit.Response {
	if !wire.ValidCallID(id) {
		return toolkit.Final(id, toolkit.CodeInvalidInput, fmt.Sprintf("BadRequestError: the call id %s is invalid: it must be 1-%d characters of [A-Za-z0-9_-].", wire.Quote(id), wire.MaxCallIDLen))
	}
	k, ok, err := c.lookup(ctx, id, true)
	switch {
	case err != nil:
		return toolkit.Final(id, toolkit.CodeUnavailable, fmt.Sprintf("ToolUnavailableError: reading kept results: %v", err))
	case !ok:
		return toolkit.Final(id, toolkit.CodeNotFound, fmt.Sprintf(
			"ResultNotFoundError: no result is kept for call '%s': it was not sent to keep its result, has not ended yet, or its result expired.", id))
	}
	return k.final
}

// approvalResend is the message id under which a durable call that the
// calls stream has seen already (msgID, within its dedup window) is
// queued again, when it may be: its kept final (key) is
// approval_required, so it ended without running and is sent again after
// its approval, as the permission flow says. The new id carries the kept
// final's revision, so identical re-sends stay one call; rev is that
// revision (the kept final is not the answer of the call sent again).
// false: a true duplicate (the call ran, runs, or nothing is kept of it).
func approvalResend(ctx context.Context, js jetstream.JetStream, b jetstream.KeyValue, key, msgID string) (id string, rev uint64, ok bool) {
	if b == nil {
		return "", 0, false
	}
	k, ok, err := readKept(ctx, js, b.Bucket(), key, true)
	if err != nil || !ok || !k.awaitsApproval() {
		return "", 0, false
	}
	return msgID + "~" + strconv.FormatUint(k.rev, 10), k.rev, true
}

// awaitsApproval reports whether a kept final ended its call without
// running it, for an approval: approval_required (it runs when sent again
// after its approval), or denied as an approval mismatch (another tool or
// input under its id presented its approval, which stays unused for the
// approved call, sent again after it), or denied by a user (the refusal
// is of one input: another input under its id asks, and runs once
// approved; the refused one, sent again, is denied again). Only a final
// whose tool was not entered ended so: a tool can end its call with such
// a code and metadata itself, having run (keptOf.ran), and
// awaitsApproval is not asked of it.
func awaitsApproval(r *toolkit.Response) bool {
	switch r.Code {
	case toolkit.CodeApprovalRequired:
		return true
	case toolkit.CodeDenied:
		reason, _ := r.Metadata[wire.MetaPermissionReason].(string)
		return reason == wire.PermissionApprovalMismatch || reason == wire.PermissionUserDenied
	}
	return false
}

// lookAgain are the waits before each new look for a result not found:
// about a second in all.
var lookAgain = []time.Duration{10 * time.Millisecond, 40 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 600 * time.Millisecond}

// keptOf is what a worker writes beside a kept final, in its headers
// (keptFinalIn), and readKept reads back: which call, and which attempt
// of it, the final is of, and whether its tool ran. A kept final of an
// earlier build may carry none of them.
type keptOf struct {
	// attempt is which attempt of its call the final is (keepLatest;
	// wire.HeaderAttempt): 0 when it does not say.
	attempt uint64
	// reply is the reply subject of the core call that kept it
	// (wire.HeaderReply; callOf): "" on a durable call's.
	reply string
	// ran: the call's tool was entered and the call did not succeed
	// (toolkit.RanWriter; wire.HeaderRan).
	ran bool
}

// keptFinal is a kept final as readKept reads it: the final, its
// revision in the results bucket, and what was written beside it.
type keptFinal struct {
	final *toolkit.Response
	rev   uint64
	keptOf
}

// awaitsApproval reports whether the kept final ended its call without
// running it, for an approval (awaitsApproval): not one its tool ended
// the call with.
func (k keptFinal) awaitsApproval() bool {
	return !k.ran && awaitsApproval(k.final)
}

// kept is the kept final of call id when there is one stored after
// revision stale and kept by the call of reply subject own (read within a
// short bound: it is looked for when a call falls silent). A call sent
// again after its approval has the revision of its earlier
// approval_required final as stale: that final is not its answer. A kept
// final is the call's own only when it carries its reply subject: another
// call under the same id (ids may be reused, and a final is kept for an
// hour) kept its own with another. own.anyOld takes one that carries
// none too (kept by an earlier build, which wrote none on a durable
// call's). With again (the caller holds the call's final) a key not found
// is looked for again, as by Result.
func (c *Client) kept(ctx context.Context, id string, stale uint64, own keptBy, again bool) (*toolkit.Response, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	k, ok, err := c.lookup(ctx, id, again)
	return k.final, ok && err == nil && k.rev > stale && (k.reply == own.reply || own.anyOld && k.reply == "")
}

// keptBy names the call whose kept final Client.kept takes: its reply
// subject, and whether one kept without any (by an earlier build) is
// taken too, as durable calls did before their kept finals carried it.
type keptBy struct {
	reply  string
	anyOld bool
}

// lookup reads the kept final of the client's call id (again: see
// readKept).
func (c *Client) lookup(ctx context.Context, id string, again bool) (keptFinal, bool, error) {
	b, err := c.resultsBucket(ctx)
	if err != nil || b == nil {
		return keptFinal{}, false, err
	}
	js, err := c.jetStream()
	if err != nil {
		return keptFinal{}, false, err
	}
	return readKept(ctx, js, b.Bucket(), wire.ResultKey(c.opts.Identity, id), again)
}

// readKept reads the final kept under key in bucket, with its revision
// and what was written beside it (keptOf).
// With again, a key not found is looked for again for about a second
// (lookAgain): a durable call's final is published to the bucket without
// waiting for it (results.keep), so a caller holding the final can read
// before the bucket has stored it, or ask a replica a moment behind.
//
// The value is read with its stored headers (kv.Get): a server's answer
// that a caller had stored under the key (kv.ErrForged: a copy of a
// message it may read, such as its own kept final under the same call
// id, or a 404) is an error, never the call's result nor its absence. A
// worker writes a kept final with the wire version alone (keptMsg); one
// without it (a copy asked with no_hdr), or without a final frame in it
// (a JSON API response), is not read and is an error too.
func readKept(ctx context.Context, js jetstream.JetStream, bucket, key string, again bool) (keptFinal, bool, error) {
	e, err := kv.Get(ctx, js, bucket, key)
	for _, wait := range lookAgain {
		if !again || err != nil || e.Found || kv.Sleep(ctx, wait) != nil {
			break
		}
		e, err = kv.Get(ctx, js, bucket, key)
	}
	switch {
	case errors.Is(err, kv.ErrForged):
		return keptFinal{}, false, fmt.Errorf("the kept result under %q was not written by a worker, and is not read: %w", key, err)
	case err != nil:
		return keptFinal{}, false, err
	case !e.Found:
		return keptFinal{}, false, nil
	}
	if !versioned(e.Header) {
		return keptFinal{}, false, fmt.Errorf("the kept result under %q was not written by a worker (it carries no %s), and is not read", key, wire.HeaderVersion)
	}
	var f wire.Frame
	if err := wire.Msgpack.Unmarshal(e.Value, &f); err != nil || f.Final == nil || f.Kind != wire.KindFinal {
		return keptFinal{}, false, fmt.Errorf("the kept result under %q cannot be read: %v", key, err)
	}
	of := keptOf{attempt: keptAttemptOf(e.Header), reply: e.Header.Get(wire.HeaderReply), ran: e.Header.Get(wire.HeaderRan) == "1"}
	return keptFinal{final: f.Final, rev: e.Revision, keptOf: of}, true, nil
}

// resultsBucket is the results bucket, bound once; nil while there is none.
func (c *Client) resultsBucket(ctx context.Context) (jetstream.KeyValue, error) {
	js, err := c.jetStream()
	if err != nil {
		return nil, err
	}
	c.fleetMu.Lock()
	b := c.results
	c.fleetMu.Unlock()
	if b != nil {
		return b, nil
	}
	// Bound by reading a key of its own: a caller's role may not ask the
	// bucket's stream, whose information names every identity's keys.
	if b, err = kv.BindReader(ctx, js, wire.BucketResults, wire.ResultKey(c.opts.Identity, "probe")); err != nil || b == nil {
		return nil, err
	}
	c.fleetMu.Lock()
	c.results = b
	c.fleetMu.Unlock()
	return b, nil
}
