package bus_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableExhaustedWhileNoWorkerRuns: a durable call's last delivery
// lost its worker while no other worker was up (the fleet restarting).
// JetStream's max-deliveries advisory then reached nobody: the call sat
// in the calls stream for a day and no final was kept for it, so a
// worker started later never answered it, and its waiting caller heard
// nothing. The advisory is kept for the workers that start later.
func TestDurableExhaustedWhileNoWorkerRuns(t *testing.T) {
	f := newExhaustedFleet(t)
	// Where the test sees the advisory go by, to start the next worker
	// only once it has.
	nc := natstest.Connect(t, f.s)
	advisories := make(chan *nats.Msg, 4)
	if _, err := nc.ChanSubscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."+wire.StreamCalls+".*", advisories); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	c := f.client()
	done := f.lose(c, "put", "unheard")
	select {
	case <-advisories: // ackWait after the kill: no worker heard it
	case <-time.After(guard):
		t.Fatal("no max-deliveries advisory")
	}
	f.worker("survivor", "put", false)
	f.answered(done, "survivor", guard, "an exhausted call answered by a worker started after its deliveries ran out")
	if kept := c.Result(ctxT(t), "unheard"); kept.Code != toolkit.CodeWorkerLost {
		t.Fatalf("its kept result: %+v", kept)
	}
	st, err := natstest.JS(t, nc).Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(guard); ; time.Sleep(20 * time.Millisecond) {
		info, err := st.Info(ctxT(t))
		if err == nil && info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the calls stream after it: %+v, %v", info, err)
		}
	}
}
