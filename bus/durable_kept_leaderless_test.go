package bus_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableKeptWhileResultsLeaderless: a durable call ends while the
// results bucket has no leader (its node is down; the calls stream,
// replicated, goes on), and its caller, reconnecting, misses the final.
// The final is kept once the bucket is back, and the caller reads it:
// the call ran and answered, and its answer is not lost.
func TestDurableKeptWhileResultsLeaderless(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl, admin, results := resultsOnOneNode(t)
	ctx := natstest.Ctx(t)
	wnode, cnode := (results+1)%3, (results+2)%3

	release := make(chan struct{})
	started := make(chan struct{}, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("put", "Puts a value.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-release
		return "put", nil
	}), toolkit.WithIdempotency(toolkit.Idempotent))
	wnc := nodeConn(t, cl, wnode)
	wjs := natstest.JS(t, wnc)
	w := serve(t, wnc, tk, &bus.WorkerOptions{Instance: "w1",
		Durable: &bus.DurableOptions{JetStream: wjs, AckWait: 10 * time.Second, Replicas: 3},
		Results: &bus.ResultsOptions{JetStream: wjs}})

	px := natstest.ProxyTo(t, cl.Nodes()[cnode])
	cnc := px.Conn(t, nats.IgnoreDiscoveredServers())
	c := newClient(t, cnc, &bus.ClientOptions{Heartbeat: 100 * time.Millisecond, StallTimeout: time.Second})

	done := make(chan *toolkit.Response, 1)
	cctx, cancel := context.WithTimeout(context.Background(), 2*guard)
	defer cancel()
	go func() { done <- c.Invoke(cctx, toolkit.ToolCall{ID: "p1", Name: "put", Durable: true}) }()
	<-started

	cl.Stop(results) // the results bucket has no leader
	px.Cut()         // the caller misses what comes now
	natstest.WaitFor(t, "the caller to notice the break", func() bool { return !cnc.IsConnected() })
	close(release)
	natstest.WaitFor(t, "the worker to end the call", func() bool { return w.InFlight() == 0 })
	wnc.Flush()

	cl.Start(results)
	key := wire.ResultKey("", "p1")
	natstest.WaitFor(t, "the call's final to be kept", func() bool {
		kctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		b, err := admin.KeyValue(kctx, wire.BucketResults)
		if err != nil {
			return false
		}
		_, err = b.Get(kctx, key)
		return err == nil
	})
	px.Restore()
	r := <-done
	if r.Code != "" || r.Text() != "put" {
		t.Fatalf("the caller got %s %q; want the call's result", r.Code, r.Text())
	}
}

// resultsOnOneNode starts a cluster with the results bucket on one node
// only (results), with a connection of node 0's.
func resultsOnOneNode(t *testing.T) (cl *natstest.TestCluster, admin jetstream.JetStream, results int) {
	cl = natstest.NewCluster(t)
	ctx := natstest.Ctx(t)
	admin = natstest.JS(t, clusterConn(t, cl, 0))
	for {
		b, err := admin.CreateKeyValue(ctx, bus.ResultsBucketConfig(0, 1))
		if err == nil {
			st, err := admin.Stream(ctx, "KV_"+b.Bucket())
			if err == nil && st.CachedInfo().Cluster != nil && st.CachedInfo().Cluster.Leader != "" {
				for i := range 3 {
					if st.CachedInfo().Cluster.Leader == cl.Nodes()[i].Name() {
						results = i
					}
				}
				return cl, admin, results
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("making the results bucket: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStopKeepsFinalWhileResultsLeaderless: a durable call ends while the
// results bucket has no leader, and its worker is stopped with a grace
// of a minute. The stop gave the final's keep up at its next look (100
// ms), though the grace had a minute left: the final was not kept, and
// the call, left unacknowledged, was delivered again (a call that may
// not repeat then keeps worker_lost). The keep is made again within the
// grace: the bucket back, the final is kept and the call acknowledged.
func TestStopKeepsFinalWhileResultsLeaderless(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl, admin, results := resultsOnOneNode(t)
	ctx := natstest.Ctx(t)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("charge", "Charges a card.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		<-release
		return "charged", nil
	}))
	wnc := nodeConn(t, cl, (results+1)%3)
	wjs := natstest.JS(t, wnc)
	w := serve(t, wnc, tk, &bus.WorkerOptions{Instance: "w1",
		Durable: &bus.DurableOptions{JetStream: wjs, AckWait: 10 * time.Second, Replicas: 3},
		Results: &bus.ResultsOptions{JetStream: wjs}})
	c := newClient(t, nodeConn(t, cl, (results+2)%3), nil)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{ID: "pay1", Name: "charge", Durable: true}) }()
	<-started

	cl.Stop(results) // the results bucket has no leader
	close(release)
	if r := <-done; r.Code != "" || r.Text() != "charged" {
		t.Fatalf("the call: %s %q", r.Code, r.Text())
	}
	stopped := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stopped <- w.Stop(sctx)
	}()
	time.Sleep(time.Second) // the stop under way, its keeps refused meanwhile
	cl.Start(results)
	if err := <-stopped; err != nil {
		t.Fatalf("the stop: %v", err)
	}
	kctx, cancel := context.WithTimeout(ctx, natstest.Guard)
	defer cancel()
	var kept error
	for kctx.Err() == nil {
		// Each read has a second of its own, as the test above's: one
		// request lost while the admin's connection moves to another node
		// must not use up the whole guard.
		actx, cancel := context.WithTimeout(kctx, time.Second)
		var b jetstream.KeyValue
		if b, kept = admin.KeyValue(actx, wire.BucketResults); kept == nil {
			_, kept = b.Get(actx, wire.ResultKey("", "pay1"))
		}
		cancel()
		if kept == nil || errors.Is(kept, jetstream.ErrKeyNotFound) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if kept != nil {
		t.Fatalf("the final after the stop: %v; want it kept", kept)
	}
}
