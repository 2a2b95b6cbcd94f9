package bus

import (
	"context"
	"testing"
	"time"

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
	tk := toolkit.New(nil)
	echo := toolkit.Func("echo", "Echo.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
	if err := tk.Add(echo); err != nil {
		t.Fatal(err)
	}
	w, err := Serve(natstest.Connect(t, s), tk, &WorkerOptions{AnnounceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(context.Background()) })
	nc := natstest.Connect(t, s)
	call := func(id string, h nats.Header) *toolkit.Response {
		t.Helper()
		data, err := wire.Msgpack.Marshal(&wire.Request{ID: id, Input: map[string]any{"text": "x"}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := nc.RequestMsg(&nats.Msg{Subject: wire.CallSubject("echo", ""), Header: h, Data: data}, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil || f.Final == nil {
			t.Fatalf("call %s: %v %+v", id, err, f)
		}
		return f.Final
	}
	if err := nc.PublishMsg(cancelMsg(wire.CancelSubject("", "c1"), "")); err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the worker to keep the cancel", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		_, ok := w.tombs[callKey("", "c1")]
		return ok
	})
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
