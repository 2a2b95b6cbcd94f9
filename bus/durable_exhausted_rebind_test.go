package bus_test

import (
	"testing"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
)

// TestDurableExhaustedConsumerDeleted: the exhausted stream's consumer,
// which the fleet shares, is deleted while workers run (an operator's
// `nats consumer rm`, the stream removed and made again). JetStream ends
// every worker's taking of it; the workers only logged that at debug and
// took no advisory again until restarted, so a call whose deliveries ran
// out meanwhile sat unanswered in the calls stream. A worker binds the
// consumer again, and answers it.
func TestDurableExhaustedConsumerDeleted(t *testing.T) {
	f := newExhaustedFleet(t)
	_, nc := f.worker("survivor", "other", false) // not the call's tool: it can only answer it exhausted
	if err := natstest.JS(t, nc).DeleteConsumer(ctxT(t), wire.StreamExhausted, "toolbus-exhausted"); err != nil {
		t.Fatal(err)
	}
	done := f.lose(f.client(), "put", "orphan")
	f.answered(done, "survivor", 2*guard, "a call whose deliveries ran out with the exhausted stream's consumer deleted")
}
