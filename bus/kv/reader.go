package kv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// A caller's role may not ask a bucket's stream for its information
// ($JS.API.STREAM.INFO.KV_<bucket>): asked with {"subjects_filter":">"}
// that answers with every subject the stream holds, the keys of every
// identity's sessions and kept results among them, and NATS permissions
// see the subject of a request, never its body. So a reader that may
// read only keys of its own binds a bucket by reading one of them
// (BindReader), and learns a bucket's last revision from a consumer of
// its own keys (LastRevision).

// ErrReadOnly is the error of every operation of a bucket bound with
// BindReader but Bucket: its keys are read with Get.
var ErrReadOnly = errors.New("kv: the bucket is bound by name for direct reads only")

// BindReader binds an existing bucket for reading with Get, without
// asking its stream for its information: it reads the key probe (one the
// reader may read), and any answer, the key's value or its absence, says
// that the bucket exists. No responders (no replica of the bucket's
// stream serves direct gets) is a bucket that does not exist: nil, nil,
// as Bind answers. The handle's Bucket is the bucket's name; its other
// operations fail with ErrReadOnly.
func BindReader(ctx context.Context, js jetstream.JetStream, bucket, probe string) (jetstream.KeyValue, error) {
	_, err := Get(ctx, js, bucket, probe)
	switch {
	case err == nil, errors.Is(err, ErrForged):
		return ReadOnly(bucket), nil
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse):
		return nil, nil
	}
	return nil, fmt.Errorf("kv: binding bucket %q: %w", bucket, err)
}

// ReadOnly is a bucket known by name alone (BindReader).
type ReadOnly string

var _ jetstream.KeyValue = ReadOnly("")

// GoneFrom is Gone for a bucket bound as b: one bound with BindReader is
// gone when a direct get had no responders (its reader may not ask the
// stream), as BindReader finds it missing.
func GoneFrom(ctx context.Context, js jetstream.JetStream, b jetstream.KeyValue, err error) bool {
	if _, ok := b.(ReadOnly); ok {
		return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse)
	}
	return Gone(ctx, js, b.Bucket(), err)
}

// LastRevision is bucket's last revision (its stream's last sequence),
// 0 when the bucket does not exist, asked without the stream's
// information: it makes a consumer of the keys filter names (keys the
// asker may watch, "<identity>.>" or ">"), delivering new messages only,
// whose answer names the stream's last sequence as delivered. The
// consumer takes nothing and goes after a moment of inactivity. In a
// cluster the consumer may be placed on a replica a moment behind the
// stream leader, whose last sequence is then a moment old.
func LastRevision(ctx context.Context, js jetstream.JetStream, bucket, filter string) (uint64, error) {
	ctx, cancel := bounded(ctx, js)
	defer cancel()
	stream, name, subject := "KV_"+bucket, nuid.Next(), "$KV."+bucket+"."+filter
	req, err := json.Marshal(map[string]any{"stream_name": stream, "config": map[string]any{
		"name": name, "filter_subject": subject, "deliver_policy": "new", "ack_policy": "none",
		"inactive_threshold": lastRevisionLinger.Nanoseconds(), "mem_storage": true, "num_replicas": 1,
	}})
	if err != nil {
		return 0, err
	}
	msg, err := js.Conn().RequestWithContext(ctx, apiPrefix(js.Options())+"CONSUMER.CREATE."+stream+"."+name+"."+subject, req)
	if err != nil {
		return 0, err
	}
	var resp struct {
		Error     *jetstream.APIError `json:"error"`
		Delivered *struct {
			Stream uint64 `json:"stream_seq"`
		} `json:"delivered"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, fmt.Errorf("kv: the last revision of bucket %q: %w", bucket, err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound:
		return 0, nil
	case resp.Error != nil:
		return 0, resp.Error
	case resp.Delivered == nil:
		return 0, fmt.Errorf("kv: the last revision of bucket %q: the consumer's answer names no delivered sequence", bucket)
	}
	return resp.Delivered.Stream, nil
}

// lastRevisionLinger is how long LastRevision's consumer lasts unused.
const lastRevisionLinger = time.Second

func (b ReadOnly) Bucket() string { return string(b) }

func (b ReadOnly) err() error { return fmt.Errorf("%w: %q", ErrReadOnly, string(b)) }

func (b ReadOnly) Get(context.Context, string) (jetstream.KeyValueEntry, error) { return nil, b.err() }
func (b ReadOnly) GetRevision(context.Context, string, uint64) (jetstream.KeyValueEntry, error) {
	return nil, b.err()
}
func (b ReadOnly) Put(context.Context, string, []byte) (uint64, error)       { return 0, b.err() }
func (b ReadOnly) PutString(context.Context, string, string) (uint64, error) { return 0, b.err() }
func (b ReadOnly) Create(context.Context, string, []byte, ...jetstream.KVCreateOpt) (uint64, error) {
	return 0, b.err()
}
func (b ReadOnly) Update(context.Context, string, []byte, uint64) (uint64, error) {
	return 0, b.err()
}
func (b ReadOnly) Delete(context.Context, string, ...jetstream.KVDeleteOpt) error { return b.err() }
func (b ReadOnly) Purge(context.Context, string, ...jetstream.KVDeleteOpt) error  { return b.err() }
func (b ReadOnly) Watch(context.Context, string, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return nil, b.err()
}
func (b ReadOnly) WatchAll(context.Context, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return nil, b.err()
}
func (b ReadOnly) WatchFiltered(context.Context, []string, ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return nil, b.err()
}
func (b ReadOnly) Keys(context.Context, ...jetstream.WatchOpt) ([]string, error) { return nil, b.err() }
func (b ReadOnly) ListKeys(context.Context, ...jetstream.WatchOpt) (jetstream.KeyLister, error) {
	return nil, b.err()
}
func (b ReadOnly) ListKeysFiltered(context.Context, ...string) (jetstream.KeyLister, error) {
	return nil, b.err()
}
func (b ReadOnly) History(context.Context, string, ...jetstream.WatchOpt) ([]jetstream.KeyValueEntry, error) {
	return nil, b.err()
}
func (b ReadOnly) PurgeDeletes(context.Context, ...jetstream.KVPurgeOpt) error { return b.err() }
func (b ReadOnly) Status(context.Context) (jetstream.KeyValueStatus, error)    { return nil, b.err() }
