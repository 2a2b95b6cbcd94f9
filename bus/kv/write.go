package kv

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/toolbus/toolbus/bus/wire"
)

// WriteTry bounds one attempt at a write (Write, Update, Delete, Purge):
// the bucket's stream leader stepping down drops the answer to a request
// on its way, which would otherwise be waited for until the caller's
// deadline.
const WriteTry = time.Second

// Update stores value under key of bucket when the key's last revision
// is rev, as KeyValue.Update does, or, with rev 0, when the key has no
// value (never written, or deleted: KeyValue.Create). It rides out a
// stream leader stepping down (see Write). A refusal on the revision is
// jetstream.ErrKeyRevisionMismatch (ErrKeyExists for rev 0).
func Update(ctx context.Context, js jetstream.JetStream, bucket, key string, value []byte, rev uint64) (uint64, error) {
	n, err := Write(ctx, js, bucket, key, expect(nil, rev), value)
	if rev != 0 || !wrongLast(err) {
		return n, err
	}
	// As KeyValue.Create: a key whose last message is its deletion has
	// no value, and is written on that deletion's revision.
	e, gerr := Get(ctx, js, bucket, key)
	if gerr == nil && !e.Found && e.Revision != 0 {
		if n, err = Write(ctx, js, bucket, key, expect(nil, e.Revision), value); !wrongLast(err) {
			return n, err
		}
	}
	return 0, fmt.Errorf("%w: %w", err, jetstream.ErrKeyExists)
}

// Delete places a delete marker on key of bucket, when the key's last
// revision is rev unless rev is 0, as KeyValue.Delete does (with
// jetstream.LastRevision), and answers the marker's revision (which
// KeyValue.Delete does not): a reader may be told to wait for at least
// it. It rides out a stream leader stepping down, and answers a marker
// stored as ctx ended with its revision, as Write does. A refusal on the
// revision is jetstream.ErrKeyRevisionMismatch.
func Delete(ctx context.Context, js jetstream.JetStream, bucket, key string, rev uint64) (uint64, error) {
	return Write(ctx, js, bucket, key, expect(nats.Header{wire.HeaderKVOperation: {"DEL"}}, rev), nil)
}

// Purge places a purge marker on key of bucket, removing its earlier
// revisions, as KeyValue.Purge does, riding out a stream leader stepping
// down (see Write).
func Purge(ctx context.Context, js jetstream.JetStream, bucket, key string) error {
	_, err := Write(ctx, js, bucket, key, nats.Header{wire.HeaderKVOperation: {"PURGE"}, jetstream.MsgRollup: {jetstream.MsgRollupSubject}}, nil)
	return err
}

// expect adds to hdr the compare-and-set on rev, when rev is not 0 or hdr
// is nil (a value's write: 0 then means the key has no message).
func expect(hdr nats.Header, rev uint64) nats.Header {
	if hdr == nil {
		hdr = nats.Header{}
	} else if rev == 0 {
		return hdr
	}
	hdr.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(rev, 10))
	return hdr
}

// Write publishes one message to key of bucket, with headers hdr (the
// KV operation, a compare-and-set; none for a value stored as
// KeyValue.Put stores it) and data, and answers with its revision. Each attempt is bounded by WriteTry; one unanswered (the
// stream leader stepping down dropped its answer), or refused for a
// moment without a leader (Transient), is made again after a pause
// while ctx lasts. The message carries an id of its own
// (jetstream.MsgIDHeader): an attempt made again after the first was
// stored is answered by the server as a duplicate with the first one's
// revision, not stored twice, and a compare-and-set is not refused by
// its own earlier write; past the bucket's duplicate window, the key's
// last message read from the stream leader tells whether it is this one.
// An attempt whose answer was still to come when ctx ended may be stored
// after any read of the key (a stream leader storing it late), so the
// write is then made again under its id for WriteTry past ctx's end (and
// the reads that tell, WriteTry each): the server answers it as the first
// one's duplicate, or stores it now, and either way it is answered with
// its revision, never with ctx's error. A write still not told by then is
// an error wrapping ctx's, saying whether it was stored is unknown. A
// write given a ctx already ended makes no attempt: ctx's error.
// A conditional write refused while another write of the key is in
// process at the stream leader (busy) is made again after a pause while
// ctx lasts: it is answered once the other is stored or dropped; still
// refused so at ctx's end, it is an error wrapping ctx's, never a
// revision mismatch.
// A refusal on the revision is jetstream.ErrKeyRevisionMismatch.
func Write(ctx context.Context, js jetstream.JetStream, bucket, key string, hdr nats.Header, data []byte) (uint64, error) {
	id := nuid.Next()
	h := make(nats.Header, len(hdr)+1)
	for k, vs := range hdr {
		h[k] = vs
	}
	h.Set(jetstream.MsgIDHeader, id)
	// landed reports the revision of this message when it is the key's
	// last one. Asked once ctx has ended (an attempt whose answer was
	// lost as it ended), it asks within WriteTry all the same: a write
	// that happened is not to be taken for one that did not.
	// An error: the key could not be read, so whether it is cannot be
	// told.
	landed := func() (uint64, bool, error) {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WriteTry)
		defer cancel()
		e, err := LeaderGet(lctx, js, bucket, key)
		return e.Revision, err == nil && e.Header.Get(jetstream.MsgIDHeader) == id, err
	}
	unanswered, asked := false, false
	var ended error // ctx's error, once its end was ridden past (WriteTry)
	for {
		if ctx.Err() != nil && !unanswered {
			return 0, ctx.Err() // no attempt was made
		}
		wctx, cancel := context.WithTimeout(ctx, WriteTry)
		ack, err := js.PublishMsg(wctx, &nats.Msg{Subject: "$KV." + bucket + "." + key, Header: h, Data: data})
		cancel()
		if !asked && (errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)) {
			// A bucket deleted since it was bound (nats kv rm, a
			// JetStream reset) fails as an election does: asked about
			// once, it fails at once, not for as long as ctx lasts.
			asked = true
			if Gone(ctx, js, bucket, err) {
				return 0, fmt.Errorf("%w (%v)", jetstream.ErrBucketNotFound, err)
			}
		}
		switch {
		case err == nil:
			return ack.Sequence, nil
		case ctx.Err() == nil && maybeStored(err):
			unanswered = true
			if n, ok, _ := landed(); ok {
				return n, nil
			}
			// ctx ending in the pause: the next attempt fails at once,
			// and its end is ridden past below.
			_ = Sleep(ctx, 50*time.Millisecond)
			continue
		case ctx.Err() != nil && (unanswered || maybeStored(err)):
			// ctx ended with an attempt's answer on its way: stored
			// already, or maybe later than any read now.
			n, ok, rerr := landed()
			switch {
			case ok:
				return n, nil
			case ended == nil:
				// Made again under its id, within WriteTry: answered as
				// the earlier one's duplicate, or stored now.
				ended, unanswered = ctx.Err(), true
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), WriteTry)
				defer cancel()
				continue
			case rerr == nil && wrongLast(err):
				return 0, fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
			case rerr == nil:
				rerr = errors.New("not its key's last message")
			}
			return 0, fmt.Errorf("kv: whether a write to %s was stored could not be told within %v past its context's end: %w (last read: %v; last attempt: %v)", key, WriteTry, ended, rerr, err)
		case busy(err):
			// Another write of the key in process at the stream leader
			// (or a mark of one left there): this attempt was not
			// stored, and nothing is decided on the revision yet. Made
			// again after a pause: once the other is stored it is
			// refused on the revision; dropped, it is stored.
			if ctx.Err() == nil && Sleep(ctx, 50*time.Millisecond) == nil || unanswered {
				continue // ctx's end with an earlier attempt unanswered: told above
			}
			return 0, fmt.Errorf("kv: a write to %s was refused until its context ended, another write of the key being in process at the stream leader: %w (last attempt: %v)", key, ctx.Err(), err)
		case unanswered:
			// Refused on its own earlier write?
			n, ok, rerr := landed()
			switch {
			case ok:
				return n, nil
			case rerr != nil:
				// Unread (a leader being elected): a refusal now may
				// be of its own earlier write. Made again (the same
				// message id) and read again.
				_ = Sleep(ctx, 50*time.Millisecond)
				continue
			}
		}
		if wrongLast(err) {
			return 0, fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
		}
		return 0, err
	}
}

// maybeStored reports an attempt's error that leaves whether it was
// stored unknown: its answer not come (an attempt's bound, ctx's end), or
// a refusal for a moment (no leader; an earlier attempt still stored).
func maybeStored(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || Transient(err) || inProcess(err)
}

// wrongLast reports a write refused on its expected revision (10071,
// from a replicated stream too: its leader compares the key's last
// stored revision before it proposes the write).
func wrongLast(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// busy reports a conditional write that a replicated stream's leader
// refused without looking at the revision (10164, described as "wrong
// last sequence" too): another write of the key was proposed and is not
// stored yet. That one may never be (a proposal lost in a stepdown), and
// the mark of it may outlive it until the next leader change: in
// nats-server 2.15.2 a write's apply that runs before its proposer has
// set the mark (the leader's first proposal since it was elected, under
// load) does not clear it (a data race the race detector reports, seen
// through stepdowns: both workers consuming an approval were refused so).
// It is no revision mismatch.
func busy(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// errCodeDuplicateInProcess is JetStream's error code for a message
// whose id is that of one still being stored
// (JSStreamDuplicateMessageConflict): an earlier attempt's.
const errCodeDuplicateInProcess = 10158

// inProcess reports a write refused because an earlier attempt of it is
// still being stored: asked again, it is answered as that one's.
func inProcess(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errCodeDuplicateInProcess
}
