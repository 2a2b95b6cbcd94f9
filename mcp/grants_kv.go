package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus/kv"
	"github.com/toolbus/toolbus/bus/wire"
)

// KVGrants is a GrantStore in a JetStream KV bucket (wire.BucketOAuth,
// toolbus_oauth): one key per server name, the grant as JSON, compare and
// set on the key's revision. Every worker of the fleet reads it; the
// tokens in it are secrets, so no caller role may (auth.Worker alone).
type KVGrants struct {
	b  jetstream.KeyValue
	js jetstream.JetStream // to read a grant with its stored headers (Load)
}

// OpenGrants binds the fleet's grant bucket, creating it (history 1, file
// storage, no TTL: a refresh token lives as long as the authorization
// server lets it) with replicas when it does not exist.
func OpenGrants(ctx context.Context, js jetstream.JetStream, replicas int) (*KVGrants, error) {
	b, err := kv.Open(ctx, js, jetstream.KeyValueConfig{Bucket: wire.BucketOAuth, History: 1, Storage: jetstream.FileStorage, Replicas: replicas,
		Description: "toolbus: OAuth grants of mounted MCP servers (secrets)"})
	if err != nil {
		return nil, err
	}
	return &KVGrants{b: b, js: js}, nil
}

// Load implements GrantStore. The grant is read with its stored headers
// (kv.Get) and decoded strictly (decodeGrant): NATS does not check a
// request's reply subject, so any client may have the server store its
// answer to a request of its own (an API response, a 404, a copy of a
// message it may read) under a server's key. Such a value is an error
// with its revision (kv.ErrForged, or the decoding's), never a grant: a
// login replaces it.
func (s *KVGrants) Load(ctx context.Context, server string) (*Grant, uint64, error) {
	var e kv.Entry
	var err error
	for {
		rctx, cancel := context.WithTimeout(ctx, grantTry)
		e, err = kv.Get(rctx, s.js, s.b.Bucket(), server)
		cancel()
		if !s.again(ctx, err) {
			break
		}
	}
	switch {
	case errors.Is(err, kv.ErrForged):
		return nil, e.Revision, fmt.Errorf("mcp: the stored grant of %q was not written by toolbus: %w", server, err)
	case err != nil:
		return nil, 0, fmt.Errorf("mcp: reading the grant of %q: %w", server, err)
	case !e.Found:
		return nil, 0, nil
	}
	g, err := decodeGrant(e.Value)
	if err != nil {
		return nil, e.Revision, err
	}
	return g, e.Revision, nil
}

// Save implements GrantStore.
func (s *KVGrants) Save(ctx context.Context, server string, g *Grant, rev uint64) (uint64, error) {
	b, err := encodeGrant(g)
	if err != nil {
		return 0, err
	}
	// Each attempt bounded, made again when unanswered, its own
	// earlier write told from another's (kv.Update).
	n, err := kv.Update(ctx, s.js, s.b.Bucket(), server, b, rev)
	switch {
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return 0, ErrGrantChanged
	case err != nil:
		return 0, fmt.Errorf("mcp: storing the grant of %q: %w", server, err)
	}
	return n, nil
}

// grantTry bounds one attempt at reading a grant: the
// bucket's stream leader stepping down drops the answer to a request on
// its way, which would be waited for until the caller's deadline.
const grantTry = time.Second

// again reports whether a request that failed with err is made again,
// after a pause: unanswered within grantTry, or refused for a moment
// without a stream leader, while ctx lasts.
func (s *KVGrants) again(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) && !kv.Transient(err) {
		return false
	}
	return kv.Sleep(ctx, 50*time.Millisecond) == nil
}

// Delete implements GrantStore.
func (s *KVGrants) Delete(ctx context.Context, server string) error {
	if err := kv.Purge(ctx, s.js, s.b.Bucket(), server); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("mcp: deleting the grant of %q: %w", server, err)
	}
	return nil
}

// Watch calls changed whenever the server's grant is stored anew, until
// ctx ends: a worker waiting for a login retries its server at once.
//
// It returns when ctx ends whether or not the watcher's channel closes:
// nats.go closes it from the subscription's closed handler, which a
// subscription ended by its context before the handler was set (or on a
// connection closing meanwhile) never calls.
//
// A watch is made under ctx, which also ends its subscription, so its
// making is bounded by kv.MakeWatch instead: a consumer's answer never
// sent (no stream leader, an answer a stepdown dropped) would otherwise
// be waited for until ctx ends, and the server never watched again. Not
// made, or ended, it is made again after a pause.
func (s *KVGrants) Watch(ctx context.Context, server string, changed func()) {
	for ctx.Err() == nil {
		w, stop, err := kv.MakeWatch(ctx, func(ctx context.Context) (jetstream.KeyWatcher, error) {
			return s.b.Watch(ctx, server, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
		})
		if err == nil {
			watch(ctx, w, changed)
			stop()
		}
		_ = kv.Sleep(ctx, 5*time.Second) // not made, or ended (a reconnect?): watch again
	}
}

// watch calls changed for each update until the watcher ends or ctx does.
func watch(ctx context.Context, w jetstream.KeyWatcher, changed func()) {
	updates := w.Updates()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-updates:
			if !ok {
				return
			}
			if e != nil {
				changed()
			}
		}
	}
}
