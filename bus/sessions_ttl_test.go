package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestSessionPinKeptWhileCallRuns: a session-bound call that runs longer
// than the sessions TTL keeps its session's pin: the worker renews it
// while the call runs. The pin was renewed only when a call started, so
// it expired under a long call and the session's next call, reaching
// another worker, claimed it there: the session's state stayed behind
// with the running call, and nothing said it moved.
func TestSessionPinKeptWhileCallRuns(t *testing.T) {
	testPinKeptWhileCallRuns(t, 2*time.Second, nil)
}

// TestSessionPinRenewedOnTheBucketsTTL: the sessions bucket was made by a
// worker with a shorter TTL than this fleet's workers are configured
// with; they renew pins on the bucket's TTL, the one pins expire by. They
// went by their own, so the pins of sessions in use expired.
func TestSessionPinRenewedOnTheBucketsTTL(t *testing.T) {
	testPinKeptWhileCallRuns(t, 0, func(t *testing.T, js jetstream.JetStream) {
		if _, err := js.CreateKeyValue(ctxT(t), bus.SessionsBucketConfig(2*time.Second, 1)); err != nil {
			t.Fatal(err)
		}
	})
}

// testPinKeptWhileCallRuns runs a call of session s on w1 until its pin
// as claimed is gone from the bucket, then sends a call of s to w2: it
// must go to w1. The workers have TTL ttl; before is run first.
func testPinKeptWhileCallRuns(t *testing.T, ttl time.Duration, before func(*testing.T, jetstream.JetStream)) {
	s := natstest.Embedded(t, false)
	if before != nil {
		before(t, natstest.JS(t, natstest.Connect(t, s)))
	}
	started, release := make(chan struct{}), make(chan struct{})
	holdWorker := func(instance string) {
		tk := storeToolkit(t)
		schema := map[string]any{"type": "object", "properties": map[string]any{"value": map[string]any{"type": "string"}}}
		mustAdd(t, tk, toolkit.Raw("hold", "Run until released.", schema, func(ctx context.Context, _ *toolkit.Call, w toolkit.Writer) error {
			started <- struct{}{}
			select {
			case <-release:
				return w.Write(toolkit.Text("released"))
			case <-ctx.Done():
				return ctx.Err()
			}
		}), toolkit.SessionBound())
		nc := natstest.Connect(t, s)
		serve(t, nc, tk, &bus.WorkerOptions{Instance: instance,
			Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, nc), TTL: ttl}})
	}
	holdWorker("w1")
	holdWorker("w2")
	nc := natstest.Connect(t, s)
	b, err := natstest.JS(t, nc).KeyValue(ctxT(t), wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan []rvFrame, 1)
	go func() {
		done <- rvCall(t, nc, wire.PinnedSubject("w1", "hold", ""), nil, "s", "", time.Minute)
	}()
	select {
	case <-started:
	case frames := <-done:
		t.Fatalf("hold ended at once: %+v", frames)
	}
	e0, err := b.Get(ctxT(t), "s")
	if err != nil || string(e0.Value()) != "w1" {
		t.Fatalf("the pin while hold runs: %v, %v", e0, err)
	}
	// Until the pin as it was claimed is gone from the bucket: expired,
	// or replaced by a renewal.
	st, err := natstest.JS(t, nc).Stream(ctxT(t), "KV_"+wire.BucketSessions)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the claimed pin to be replaced or expire", func() bool {
		_, err := st.GetMsg(context.Background(), e0.Revision())
		return errors.Is(err, jetstream.ErrMsgNotFound)
	})
	// The session's next call reaches w2 (as from the queue group).
	f := rvFinal(t, rvCall(t, nc, wire.PinnedSubject("w2", "put", ""), nil, "s", "v", 10*time.Second))
	close(release)
	if f.meta(wire.MetaSessionWorker) != "w1" || f.meta(wire.MetaWorker) != "w1" {
		t.Fatalf("while w1 runs a call of session s, w2 took it: %+v", f.Final)
	}
	if f := rvFinal(t, <-done); f.text() != "released" {
		t.Fatalf("hold: %+v", f.Final)
	}
}
