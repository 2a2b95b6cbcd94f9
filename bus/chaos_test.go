package bus_test

// Chaos on a 3-node JetStream cluster (R3 calls stream, R3 results): a
// node that a worker or a caller is connected to goes down mid-batch, the
// calls stream's leader steps down under load. Each test asserts the
// contract of subjects.md for every call: exactly one final; a durable
// call of an idempotent or read-only tool completes; a durable call of a
// tool that may not run again runs at most once, and ends with its result
// or worker_lost ("it may or may not have taken effect"); a core call ends
// with its result (lost chunk frames said in lost_chunks) or worker_lost.
//
// A durable call of a tool that may not run again can end worker_lost
// without having run at all, no worker lost: JetStream counts a call
// delivered when the consumer's leader sends it, and a delivery lost on
// its way (the leader's node, or the pulling worker's, going down with it
// in flight) comes again as attempt 2, which such a tool does not run
// (subjects.md, Durable calls). The tests allow it, as the contract does.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// ledger counts the runs of each call (by its key: the first id).
type ledger struct {
	mu   sync.Mutex
	runs map[string]int
}

func (l *ledger) add(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string]int{}
	}
	l.runs[key]++
}

func (l *ledger) get(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs[key]
}

const feedChunks = 20

// chaosToolkit has charge (may not run again), put (idempotent) and feed
// (read-only, streams feedChunks chunks), each taking about d.
func chaosToolkit(t *testing.T, l *ledger, d time.Duration) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	run := func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		l.add(call.Key())
		sleepFor(ctx, d)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return w.Write(toolkit.Text("done " + call.Key()))
	}
	mustAdd(t, tk, toolkit.Raw("charge", "Charge once.", schema, run))
	mustAdd(t, tk, toolkit.Raw("put", "Put a value.", schema, run), toolkit.WithIdempotency(toolkit.Idempotent))
	mustAdd(t, tk, toolkit.Raw("feed", "Stream a feed.", schema, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		l.add(call.Key())
		for i := range feedChunks {
			if err := w.Write(toolkit.Text(fmt.Sprintf("%d;", i))); err != nil {
				return err
			}
			sleepFor(ctx, d/feedChunks)
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	}), toolkit.ReadOnly())
	return tk
}

func feedText() string {
	var b strings.Builder
	for i := range feedChunks {
		fmt.Fprintf(&b, "%d;", i)
	}
	return b.String()
}

func sleepFor(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-tm.C:
	}
}

// clusterConn connects to the cluster preferring node first (then the
// others, in order), reconnecting for ever.
func clusterConn(t *testing.T, cl *natstest.TestCluster, first int) *nats.Conn {
	t.Helper()
	urls := strings.Split(cl.URLs(), ",")
	ordered := []string{urls[first]}
	for i, u := range urls {
		if i != first {
			ordered = append(ordered, u)
		}
	}
	nc, err := nats.Connect(strings.Join(ordered, ","), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// chaosWorker serves tk on node with the durable path and kept results,
// both R3.
func chaosWorker(t *testing.T, cl *natstest.TestCluster, node int, tk *toolkit.Toolkit, instance string) *bus.Worker {
	t.Helper()
	nc := clusterConn(t, cl, node)
	js := natstest.JS(t, nc)
	return serve(t, nc, tk, &bus.WorkerOptions{Instance: instance,
		Durable: &bus.DurableOptions{JetStream: js, AckWait: 2 * time.Second, Replicas: 3},
		Results: &bus.ResultsOptions{JetStream: js, Replicas: 3}})
}

// outcome is what a caller saw of one call.
type outcome struct {
	call   toolkit.ToolCall
	finals int
	final  *toolkit.Response
}

// batch runs the calls, par at a time, each ranged to its end.
func batch(c *bus.Client, calls []toolkit.ToolCall, par int) []outcome {
	out := make([]outcome, len(calls))
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, call := range calls {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*guard)
			defer cancel()
			o := outcome{call: call}
			for ev := range c.Call(ctx, call) {
				if ev.Final != nil {
					o.finals++
					o.final = ev.Final
				}
			}
			out[i] = o
		})
	}
	wg.Wait()
	return out
}

// mixed is n calls of each kind: durable charge, put and feed, core put
// and feed.
func mixed(prefix string, n int) []toolkit.ToolCall {
	var calls []toolkit.ToolCall
	for i := range n {
		for _, k := range []struct {
			tool    string
			durable bool
		}{{"charge", true}, {"put", true}, {"feed", true}, {"put", false}, {"feed", false}} {
			kind := "core"
			if k.durable {
				kind = "durable"
			}
			calls = append(calls, toolkit.ToolCall{ID: fmt.Sprintf("%s-%s-%s-%d", prefix, kind, k.tool, i), Name: k.tool, Durable: k.durable})
		}
	}
	return calls
}

// checkContract asserts the contract for every outcome, and returns the
// finals counted by kind and code.
func checkContract(t *testing.T, l *ledger, outs []outcome) map[string]int {
	t.Helper()
	tally := map[string]int{}
	for _, o := range outs {
		id, r := o.call.ID, o.final
		if o.finals != 1 || r == nil {
			t.Errorf("%s: %d finals", id, o.finals)
			continue
		}
		kind := "core"
		if o.call.Durable {
			kind = "durable"
		}
		tally[fmt.Sprintf("%s %s %s", kind, o.call.Name, codeName(r.Code))]++
		runs := l.get(id)
		if r.Code != "" {
			t.Logf("%s: %s after %d runs: %q %v", id, r.Code, runs, r.Text(), r.Metadata)
		}
		want := "done " + id
		if o.call.Name == "feed" {
			want = feedText()
		}
		switch {
		case r.ID != id:
			t.Errorf("%s: final of %s", id, r.ID)
		case r.Code == "" && r.Text() != want && (o.call.Durable || r.Metadata[wire.MetaLostChunks] == nil):
			// Only a core call may lose chunk frames (said in
			// lost_chunks); a durable call's caller reads the kept final.
			t.Errorf("%s: a success with %q, want %q (metadata %v)", id, r.Text(), want, r.Metadata)
		case r.Code == "" && runs == 0:
			t.Errorf("%s: a success, and the tool never ran", id)
		case o.call.Name == "charge" && runs > 1:
			t.Errorf("%s: a tool that may not run again ran %d times (final %s %q)", id, runs, r.Code, r.Text())
		case o.call.Durable && o.call.Name != "charge" && r.Code != "":
			t.Errorf("%s: a durable call of a tool that may run again ended %s: %q", id, r.Code, r.Text())
		case r.Code != "" && r.Code != toolkit.CodeWorkerLost:
			t.Errorf("%s: ended %s: %q", id, r.Code, r.Text())
		}
	}
	return tally
}

func codeName(c toolkit.Code) string {
	if c == "" {
		return "ok"
	}
	return string(c)
}

// afterwards runs fault once cond holds (or after guard, so the fault
// comes whatever the load), on a goroutine; the channel is closed when
// it did.
func afterwards(cond func() bool, fault func()) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for deadline := time.Now().Add(guard); !cond() && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		fault()
	}()
	return done
}

// settle waits until every worker has nothing in flight: late runs of a
// call (a redelivery) would otherwise be counted after the check.
func settle(t *testing.T, ws ...*bus.Worker) {
	t.Helper()
	natstest.WaitFor(t, "the workers to have no call in flight", func() bool {
		for _, w := range ws {
			if w.InFlight() != 0 {
				return false
			}
		}
		return true
	})
}

// TestChaosWorkerNodeDown: the node one of two workers is connected to
// goes down mid-batch; the worker reconnects to another node and the
// caller, on a third node, gets one final per call within the contract.
func TestChaosWorkerNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	tk := chaosToolkit(t, &l, 400*time.Millisecond)
	w1 := chaosWorker(t, cl, 0, tk, "w1")
	w2 := chaosWorker(t, cl, 1, tk, "w2")
	c := newClient(t, clusterConn(t, cl, 2), &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	calls := mixed("wnd", 12)
	down := afterwards(func() bool { return w1.InFlight() > 2 }, func() { cl.Stop(0) })
	outs := batch(c, calls, 30)
	<-down
	settle(t, w1, w2)
	t.Logf("finals: %v", checkContract(t, &l, outs))
}

// TestChaosCallerNodeDown: the node the caller is connected to goes down
// while its calls stream; the caller reconnects to another node. Durable
// calls end with their whole result (read from the kept final where
// frames were lost); core calls with theirs or worker_lost.
func TestChaosCallerNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	tk := chaosToolkit(t, &l, 800*time.Millisecond)
	w1 := chaosWorker(t, cl, 1, tk, "w1")
	w2 := chaosWorker(t, cl, 2, tk, "w2")
	c := newClient(t, clusterConn(t, cl, 0), &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	calls := mixed("cnd", 12)
	down := afterwards(func() bool { return w1.InFlight()+w2.InFlight() > 10 }, func() { cl.Stop(0) })
	outs := batch(c, calls, 30)
	<-down
	settle(t, w1, w2)
	t.Logf("finals: %v", checkContract(t, &l, outs))
}

// TestChaosStreamLeaderMoves: the calls stream's leader, the tools'
// consumers' leaders and the results bucket's leader step down again and
// again while durable calls run. No durable call is lost.
func TestChaosStreamLeaderMoves(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	tk := chaosToolkit(t, &l, 200*time.Millisecond)
	w1 := chaosWorker(t, cl, 0, tk, "w1")
	w2 := chaosWorker(t, cl, 1, tk, "w2")
	c := newClient(t, clusterConn(t, cl, 2), &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	admin := clusterConn(t, cl, 2)
	stop := make(chan struct{})
	stepped := make(chan int, 1)
	go func() {
		n := 0
		defer func() { stepped <- n }()
		subjects := []string{
			"$JS.API.STREAM.LEADER.STEPDOWN.toolbus_calls",
			"$JS.API.CONSUMER.LEADER.STEPDOWN.toolbus_calls.charge",
			"$JS.API.CONSUMER.LEADER.STEPDOWN.toolbus_calls.put",
			"$JS.API.CONSUMER.LEADER.STEPDOWN.toolbus_calls.feed",
			"$JS.API.STREAM.LEADER.STEPDOWN.KV_toolbus_results",
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			m, err := admin.Request(subjects[i%len(subjects)], nil, 5*time.Second)
			if err == nil && strings.Contains(string(m.Data), `"success":true`) {
				n++
			} else if err != nil {
				t.Logf("stepdown: %v", err)
			} else {
				t.Logf("stepdown: %s", m.Data)
			}
		}
	}()
	var calls []toolkit.ToolCall
	for _, call := range mixed("sld", 40) {
		if call.Durable {
			calls = append(calls, call)
		}
	}
	outs := batch(c, calls, 20)
	close(stop)
	settle(t, w1, w2)
	tally := checkContract(t, &l, outs)
	t.Logf("finals: %v; %d leader stepdowns", tally, <-stepped)
}

// TestWorkerStartsThroughAnElection: a durable worker started while its
// cluster has no quorum for the moment (two of three nodes down, as
// during a restart of the fleet's servers) starts once the nodes are
// back, within its start's 30 s, instead of failing its start.
func TestWorkerStartsThroughAnElection(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	tk := chaosToolkit(t, &l, 0)
	chaosWorker(t, cl, 0, tk, "w1") // the calls stream and the results bucket, R3
	nc := clusterConn(t, cl, 0)
	js := natstest.JS(t, nc)
	restore := cl.LoseQuorum() // node 0 has the connections
	started := make(chan error, 1)
	go func() {
		w, err := bus.Serve(nc, tk, &bus.WorkerOptions{Instance: "w2",
			Durable: &bus.DurableOptions{JetStream: js, AckWait: 2 * time.Second, Replicas: 3},
			Results: &bus.ResultsOptions{JetStream: js, Replicas: 3}})
		if err == nil {
			t.Cleanup(func() { w.Stop(context.Background()) })
		}
		started <- err
	}()
	// While the quorum is missing it does not fail (it waited out its
	// start's 30 s on one unanswered request); the node left up may
	// answer, so it may start meanwhile.
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("without a quorum, gave up: %v", err)
		}
		return
	case <-time.After(2 * time.Second):
	}
	restore()
	if err := <-started; err != nil {
		t.Fatalf("after the nodes came back: %v", err)
	}
}
