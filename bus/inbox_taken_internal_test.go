package bus

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// MaxPending bounds what a call holds that its caller has not taken: a
// batch the client took from the inbox and is still handing to a slow
// caller is not taken yet. It was forgotten at the take, so up to another
// MaxPending could arrive meanwhile: twice the bound.
func TestInboxCountsTheBatchBeingHanded(t *testing.T) {
	m := &nats.Msg{Subject: "_INBOX.x.y", Data: make([]byte, 1000)}
	b := &inbox{limit: 10 * heldCost(m), total: new(atomic.Int64)}
	now := time.Now()
	for range 8 {
		if b.push(m, now) {
			t.Fatal("over the bound before it")
		}
	}
	msgs, _, _, _, _ := b.take(nil) // being handed to the caller
	over := false
	for range 3 {
		over = b.push(m, now) || over
	}
	if !over {
		t.Fatalf("11 frames held (%d taken, not yet handed, and 3 queued) under a bound of 10: not over", len(msgs))
	}
}
