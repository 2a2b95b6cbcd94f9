// Package kv holds what the fleet's JetStream KV stores share: opening a
// bucket the same way everywhere, and telling a moment without a stream
// leader from a real failure. The group state (bus.KVState) and the
// permission store (permission.KVStore) are built on it; session keys are
// wire.SessionKey.
//
//	b, err := kv.Open(ctx, js, jetstream.KeyValueConfig{Bucket: wire.BucketGroups, History: 1})
package kv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/toolkit"
)

// Open binds the bucket cfg names, creating it with cfg when it does not
// exist. An existing bucket is bound as it is: a worker never changes the
// configuration of a bucket the fleet shares (workers with different
// settings would otherwise undo each other), so the first one to create
// it decides. Two workers creating it at once both end up bound to it.
func Open(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if err := Check(cfg); err != nil {
		return nil, err
	}
	b, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		b, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) { // created concurrently
			b, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kv: binding bucket %q: %w", cfg.Bucket, err)
	}
	return b, nil
}

// Bind binds an existing bucket for reading; it returns nil, nil when the
// bucket does not exist.
func Bind(ctx context.Context, js jetstream.JetStream, bucket string) (jetstream.KeyValue, error) {
	b, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
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
func Transient(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, nats.ErrTimeout) || (errors.As(err, &apiErr) && apiErr.Code == 503)
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
