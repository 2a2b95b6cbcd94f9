package mcp

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// stuckWatcher is a KeyWatcher whose channel never closes, as nats.go's
// does not when its subscription ended before the closed handler was set.
type stuckWatcher struct{ updates chan jetstream.KeyValueEntry }

func (w stuckWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.updates }
func (w stuckWatcher) Stop() error                             { return nil }

// TestGrantWatchEndsWithItsContext: the grants watch returns once its
// context ends even when the watcher's channel stays open (a client's
// Close waited for it forever).
func TestGrantWatchEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		watch(ctx, stuckWatcher{make(chan jetstream.KeyValueEntry)}, func() {})
		close(done)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(guardTimeout):
		t.Fatalf("the watch did not end with its context within %v", guardTimeout)
	}
}
