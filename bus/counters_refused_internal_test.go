package bus

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestCancelledCountsCallsEndedBeforeTheyRan: a call whose cancel overtook
// it (answered interrupted from the tombstone), and one whose
// Toolbus-Timeout had passed when it arrived (answered timeout), were
// ended by a cancel and a deadline on this worker, as WorkerCounters'
// Cancelled says it counts, but were not counted: the metric
// toolbus_worker_cancelled_calls_total stayed below the interrupted and
// timeout finals the worker sent for its callers' cancels and deadlines.
func TestCancelledCountsCallsEndedBeforeTheyRan(t *testing.T) {
	s := natstest.Embedded(t, false)
	w := serveEcho(t, s, WorkerOptions{})
	nc := natstest.Connect(t, s)
	call := func(id string, h nats.Header) *toolkit.Response {
		t.Helper()
		return rawFinal(t, nc, wire.CallSubject("echo", ""), h, echoRequest(t, id, ""))
	}
	if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("", "c1"), "")); err != nil {
		t.Fatal(err)
	}
	keepsCancel(t, w, "c1")
	if r := call("c1", nil); r.Code != toolkit.CodeInterrupted {
		t.Fatalf("a call its cancel overtook: %+v", r)
	}
	if r := call("c2", nats.Header{wire.HeaderTimeout: {"0"}}); r.Code != toolkit.CodeTimeout {
		t.Fatalf("a call past its deadline on arrival: %+v", r)
	}
	if r := call("c3", nil); r.State != toolkit.StateSuccess {
		t.Fatalf("a plain call: %+v", r)
	}
	if n := w.Counters(); n.Cancelled != 2 || n.Frames[wire.KindFinal] != 3 {
		t.Errorf("counters: cancelled %d, finals %d; want 2 cancelled of 3 finals", n.Cancelled, n.Frames[wire.KindFinal])
	}
}
