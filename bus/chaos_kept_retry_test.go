package bus_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestChaosKeptRetryWorkerNodeDown: core calls of an idempotent tool that
// keep their results run on a worker whose node goes down (and comes
// back a while later). The caller, hearing nothing, sends them again to
// another worker; the first attempts run on once their worker is back.
// Each call ends once, and the final kept under its id is the one its
// caller got.
func TestChaosKeptRetryWorkerNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("put", "Put a value.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		l.add(call.Key())
		sleepFor(context.Background(), 1500*time.Millisecond) // heedless of cancels
		return w.Write(toolkit.Text("ran " + call.ID))
	}), toolkit.WithIdempotency(toolkit.Idempotent))
	keeping := func(nc *nats.Conn, instance string) *bus.Worker {
		return serve(t, nc, tk, &bus.WorkerOptions{Instance: instance, AbandonAfter: 5 * time.Second,
			Results: &bus.ResultsOptions{JetStream: natstest.JS(t, nc), Replicas: 3}})
	}
	// Only node 0: the worker stays away while it is down.
	w1 := keeping(nodeConn(t, cl, 0), "w1")
	w2 := keeping(clusterConn(t, cl, 1), "w2")
	c := newClient(t, clusterConn(t, cl, 2), &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	waitWorkers(t, c, "w1", "w2")
	var calls []toolkit.ToolCall
	for i := range 12 {
		calls = append(calls, toolkit.ToolCall{ID: fmt.Sprint("krw-", i), Name: "put", KeepResult: true})
	}
	down := afterwards(func() bool { return w1.InFlight() >= 3 }, func() {
		cl.Stop(0)
		time.Sleep(2 * time.Second)
		cl.Start(0)
	})
	outs := batch(c, calls, 12)
	<-down
	cl.WaitReady()
	settle(t, w1, w2)
	retried := 0
	for _, o := range outs {
		id, r := o.call.ID, o.final
		if o.finals != 1 {
			t.Errorf("%s: %d finals", id, o.finals)
			continue
		}
		if r.Metadata[wire.MetaAttempts] != nil {
			retried++
		}
		if r.Code != "" {
			t.Logf("%s: %s after %d runs: %q", id, r.Code, l.get(id), r.Text())
			if r.Code != toolkit.CodeWorkerLost {
				t.Errorf("%s: ended %s", id, r.Code)
			}
			continue
		}
		// Read until it is the caller's: Result reads any replica, and
		// the node back from its outage may answer from a moment behind
		// (an earlier attempt's final, written over since). A final kept
		// wrongly stays so.
		var kept *toolkit.Response
		for deadline := time.Now().Add(guard); ; time.Sleep(100 * time.Millisecond) {
			if kept = c.Result(ctxT(t), id); (kept.Code == "" && kept.Text() == r.Text()) || time.Now().After(deadline) {
				break
			}
		}
		if kept.Code != "" || kept.Text() != r.Text() {
			t.Errorf("%s: the caller got %q, kept is %s %q %v later", id, r.Text(), kept.Code, kept.Text(), guard)
		}
	}
	t.Logf("%d of %d calls sent again", retried, len(calls))
}
