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
	e, err := kv.Get(ctx, s.js, s.b.Bucket(), server)
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
	var n uint64
	if rev == 0 {
		n, err = s.b.Create(ctx, server, b)
	} else {
		n, err = s.b.Update(ctx, server, b, rev)
	}
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, ErrGrantChanged
	}
	if err != nil {
		return 0, fmt.Errorf("mcp: storing the grant of %q: %w", server, err)
	}
	return n, nil
}

// Delete implements GrantStore.
func (s *KVGrants) Delete(ctx context.Context, server string) error {
	if err := s.b.Purge(ctx, server); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
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
func (s *KVGrants) Watch(ctx context.Context, server string, changed func()) {
	for ctx.Err() == nil {
		w, err := s.b.Watch(ctx, server, jetstream.UpdatesOnly(), jetstream.IgnoreDeletes())
		if err == nil {
			watch(ctx, w, changed)
			_ = w.Stop()
		}
		_ = kv.Sleep(ctx, 5*time.Second) // the watch ended (a reconnect?): watch again
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
