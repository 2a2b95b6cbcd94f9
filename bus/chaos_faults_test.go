package bus_test

// More faults on a 3-node cluster: the quorum lost while sessions
// activate groups, a session-bound call whose worker's node goes down, a
// cancel sent while the caller's node is down, the calls stream's leader
// restarting. Each call ends with exactly one final, with a code that
// says what happened, and no call outlives its deadline by more than the
// time the client gives a silent worker.

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

// one ranges a call to its end and returns its finals and the last one.
func one(c *bus.Client, ctx context.Context, call toolkit.ToolCall) (int, *toolkit.Response) {
	n := 0
	var last *toolkit.Response
	for ev := range c.Call(ctx, call) {
		if ev.Final != nil {
			n++
			last = ev.Final
		}
	}
	return n, last
}

// oneWithin is one, given up on when the call has not ended within
// (ended false): a call that outlives its deadline by that much fails its
// test instead of hanging it.
func oneWithin(c *bus.Client, ctx context.Context, call toolkit.ToolCall, within time.Duration) (n int, last *toolkit.Response, ended bool) {
	type result struct {
		n    int
		last *toolkit.Response
	}
	done := make(chan result, 1)
	go func() {
		n, last := one(c, ctx, call)
		done <- result{n, last}
	}()
	select {
	case r := <-done:
		return r.n, r.last, true
	case <-time.After(within):
		return 0, nil, false
	}
}

// waitWorkers waits until c hears of the worker instances: the
// announcements come after their subscriptions, so the caller's node
// knows these then.
func waitWorkers(t *testing.T, c *bus.Client, ids ...string) {
	t.Helper()
	f, err := c.Fleet(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, fmt.Sprintf("workers %v", ids), func() bool {
		seen := map[string]bool{}
		for _, in := range f.Instances() {
			seen[in.ID] = true
		}
		for _, id := range ids {
			if !seen[id] {
				return false
			}
		}
		return true
	})
}

// nodeConn connects to node only (not to the servers it tells of), so
// the connection is away while the node is down.
func nodeConn(t *testing.T, cl *natstest.TestCluster, node int) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(cl.Nodes()[node].ClientURL(), nats.IgnoreDiscoveredServers(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// vaultWorker serves a toolkit with the group vault (tool secret) and
// its group state in an R3 KV bucket, on node.
func vaultWorker(t *testing.T, cl *natstest.TestCluster, node int, instance string) *bus.Worker {
	t.Helper()
	nc := clusterConn(t, cl, node)
	state, err := bus.NewKVState(ctxT(t), natstest.JS(t, nc), &bus.KVStateOptions{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	tk := toolkit.New(&toolkit.Options{State: state})
	if err := tk.AddGroup(toolkit.Group{Name: "vault", Description: "Secret tools."}); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, tk, toolkit.Func("secret", "Secret.", func(ctx context.Context, in struct{}) (string, error) { return "s3cret", nil }), toolkit.InGroup("vault"))
	return serve(t, nc, tk, &bus.WorkerOptions{Instance: instance})
}

// TestChaosQuorumLostGroups: sessions switch the group vault on and off
// and call its tool while the cluster loses its quorum and gets it back.
// Every call ends once and in time; a call after a reset_tools that
// succeeded is judged on that state (or ends unavailable/worker_lost),
// never on an older one; once the quorum is back every session works.
func TestChaosQuorumLostGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	w1 := vaultWorker(t, cl, 0, "w1")
	w2 := vaultWorker(t, cl, 1, "w2")
	c := newClient(t, clusterConn(t, cl, 2), &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	const sessions = 6
	const callTimeout = 8 * time.Second
	// Past the call's deadline the client waits its cancel grace (the
	// stall timeout): a call still running guard after its deadline has
	// outlived it.
	const late = callTimeout + guard
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	rounds, failed := 0, 0
	for s := range sessions {
		session := fmt.Sprint("qs", s)
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				on := i%2 == 0
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				n, r, ended := oneWithin(c, ctx, toolkit.ToolCall{ID: fmt.Sprintf("%s-reset-%d", session, i), Name: toolkit.MetaToolName, Session: session, Input: map[string]any{"vault": on}}, late)
				cancel()
				if !ended {
					t.Errorf("%s reset %d: no final %v after its %v deadline", session, i, guard, callTimeout)
					return
				}
				if n != 1 {
					t.Errorf("%s reset %d: %d finals: %+v", session, i, n, r)
					return
				}
				reset := r.Code == ""
				if !reset && r.Code != toolkit.CodeUnavailable && r.Code != toolkit.CodeTimeout && r.Code != toolkit.CodeWorkerLost {
					t.Errorf("%s reset %d: ended %s: %q", session, i, r.Code, r.Text())
				}
				ctx, cancel = context.WithTimeout(context.Background(), callTimeout)
				n, r, ended = oneWithin(c, ctx, toolkit.ToolCall{ID: fmt.Sprintf("%s-secret-%d", session, i), Name: "secret", Session: session}, late)
				cancel()
				if !ended {
					t.Errorf("%s secret %d: no final %v after its %v deadline", session, i, guard, callTimeout)
					return
				}
				if n != 1 {
					t.Errorf("%s secret %d: %d finals: %+v", session, i, n, r)
					return
				}
				switch {
				case r.Code == toolkit.CodeUnavailable, r.Code == toolkit.CodeTimeout, r.Code == toolkit.CodeWorkerLost:
				case !reset: // the state is this reset's or the one before
				case on && r.Code != "":
					t.Errorf("%s secret %d: vault on, ended %s: %q", session, i, r.Code, r.Text())
				case !on && r.Code != toolkit.CodeGroupInactive:
					t.Errorf("%s secret %d: vault off, ended %q: %q", session, i, r.Code, r.Text())
				}
				mu.Lock()
				rounds++
				if !reset {
					failed++
				}
				mu.Unlock()
			}
		})
	}
	countRounds := func() int { mu.Lock(); defer mu.Unlock(); return rounds }
	natstest.WaitFor(t, "rounds before the fault", func() bool { return countRounds() >= sessions })
	restore := cl.LoseQuorum()
	during := countRounds()
	// Calls go on without a quorum, longer than a call's deadline: some
	// ride the fault out, some end unavailable or timeout.
	time.Sleep(callTimeout + 2*time.Second)
	restore()
	cl.WaitReady()
	after := countRounds()
	natstest.WaitFor(t, "rounds after the fault", func() bool { return countRounds() >= after+2*sessions })
	close(stop)
	wg.Wait()
	t.Logf("%d rounds (%d during the fault), %d resets failed", countRounds(), after-during, failed)
	for s := range sessions {
		session := fmt.Sprint("qs", s)
		r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: toolkit.MetaToolName, Session: session, Input: map[string]any{"vault": true}})
		if r.Code != "" {
			t.Fatalf("%s: reset_tools after the fault: %s %q", session, r.Code, r.Text())
		}
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "secret", Session: session}); r.Code != "" || r.Text() != "s3cret" {
			t.Fatalf("%s: secret after the fault: %s %q", session, r.Code, r.Text())
		}
	}
	settle(t, w1, w2)
}

// slowStore is a toolkit with the session-bound tool hold, which runs
// until its context ends or release is closed, counting its runs.
func slowStore(t *testing.T, l *ledger, release <-chan struct{}) *toolkit.Toolkit {
	t.Helper()
	tk := toolkit.New(nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{}}
	hold := func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		l.add(call.Key())
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-release:
		}
		return w.Write(toolkit.Text("held " + call.Key()))
	}
	mustAdd(t, tk, toolkit.Raw("hold", "Hold a session.", schema, hold), toolkit.SessionBound())
	mustAdd(t, tk, toolkit.Raw("wait", "Wait.", schema, hold))
	return tk
}

// TestChaosSessionWorkerNodeDown: the node of the worker a session is
// pinned to goes down while a call of the session runs there. The worker
// reconnects to another node; the call ends once, with its result or
// worker_lost, and the session's next call runs on one worker.
func TestChaosSessionWorkerNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	release := make(chan struct{})
	so := func(nc *nats.Conn) *bus.SessionsOptions {
		return &bus.SessionsOptions{JetStream: natstest.JS(t, nc), Replicas: 3}
	}
	nc1 := clusterConn(t, cl, 0)
	w1 := serve(t, nc1, slowStore(t, &l, release), &bus.WorkerOptions{Instance: "w1", Sessions: so(nc1)})
	nc2 := clusterConn(t, cl, 1)
	w2 := serve(t, nc2, slowStore(t, &l, release), &bus.WorkerOptions{Instance: "w2", Sessions: so(nc2)})
	c := newClient(t, clusterConn(t, cl, 2), &bus.ClientOptions{Heartbeat: 200 * time.Millisecond, MaxAttempts: 1})
	waitWorkers(t, c, "w1", "w2")
	const n = 8
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			call := toolkit.ToolCall{ID: fmt.Sprint("snd-", i), Name: "hold", Session: fmt.Sprint("s", i)}
			ctx, cancel := context.WithTimeout(context.Background(), 2*guard)
			defer cancel()
			outs[i] = outcome{call: call}
			outs[i].finals, outs[i].final = one(c, ctx, call)
		})
	}
	natstest.WaitFor(t, "the calls to run", func() bool { return w1.InFlight()+w2.InFlight() == n })
	if w1.InFlight() == 0 {
		t.Skip("no session on w1")
	}
	cl.Stop(0)
	natstest.WaitFor(t, "w1 to reconnect", nc1.IsConnected)
	close(release)
	wg.Wait()
	settle(t, w1, w2)
	for _, o := range outs {
		id, r := o.call.ID, o.final
		if o.finals != 1 {
			t.Errorf("%s: %d finals", id, o.finals)
			continue
		}
		switch {
		case r.Code == "" && r.Text() != "held "+id:
			t.Errorf("%s: %q", id, r.Text())
		case r.Code != "" && r.Code != toolkit.CodeWorkerLost:
			t.Errorf("%s: ended %s: %q", id, r.Code, r.Text())
		case r.Code == "" && l.get(id) != 1:
			t.Errorf("%s: a success after %d runs", id, l.get(id))
		}
		t.Logf("%s: %s on %v (session_worker %v)", id, codeName(r.Code), r.Metadata[wire.MetaWorker], r.Metadata[wire.MetaSessionWorker])
	}
	// The sessions' next calls: each on one worker, which the final says.
	for i := range n {
		session := fmt.Sprint("s", i)
		var workers [2]any
		for j := range 2 {
			call := toolkit.ToolCall{ID: fmt.Sprintf("snd-next-%d-%d", i, j), Name: "hold", Session: session}
			finals, r := one(c, ctxT(t), call)
			if finals != 1 || r.Code != "" {
				t.Fatalf("%s: %d finals, %+v", call.ID, finals, r)
			}
			workers[j] = r.Metadata[wire.MetaSessionWorker]
		}
		if workers[0] != workers[1] {
			t.Errorf("%s: its calls ran on %v and %v", session, workers[0], workers[1])
		}
	}
}

// TestChaosCancelCallerNodeDown: the caller cancels its calls while its
// node is down (it is reconnecting). The cancels go out once it is
// connected again; every call ends once, interrupted (or worker_lost,
// when the worker's frames stayed away past the stall timeout meanwhile),
// and no tool runs on for nobody.
func TestChaosCancelCallerNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	never := make(chan struct{})
	nc1 := clusterConn(t, cl, 1)
	w := serve(t, nc1, slowStore(t, &l, never), &bus.WorkerOptions{Instance: "w1",
		Durable: &bus.DurableOptions{JetStream: natstest.JS(t, nc1), AckWait: 2 * time.Second, Replicas: 3}})
	gone := make(chan struct{}, 1)
	urls := strings.Split(cl.URLs(), ",")
	cnc, err := nats.Connect(strings.Join(urls, ","), nats.DontRandomize(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.DisconnectErrHandler(func(*nats.Conn, error) {
			select {
			case gone <- struct{}{}:
			default:
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cnc.Close)
	c := newClient(t, cnc, &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	waitWorkers(t, c, "w1")
	const n = 6
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			call := toolkit.ToolCall{ID: fmt.Sprint("cnd-", i), Name: "wait", Durable: i%2 == 1}
			ctx, cancel := context.WithTimeout(context.Background(), 2*guard)
			defer cancel()
			outs[i] = outcome{call: call}
			outs[i].finals, outs[i].final = one(c, ctx, call)
		})
	}
	natstest.WaitFor(t, "the calls to run", func() bool { return w.InFlight() == n })
	cl.Stop(0)
	<-gone // the caller noticed (it may be connected again already)
	for i := range n {
		if err := c.Cancel(fmt.Sprint("cnd-", i)); err != nil {
			t.Logf("cancel %d: %v", i, err)
		}
	}
	wg.Wait()
	settle(t, w)
	for _, o := range outs {
		if o.finals != 1 || o.final.Code != toolkit.CodeInterrupted && o.final.Code != toolkit.CodeWorkerLost {
			t.Errorf("%s: %d finals, the last %+v", o.call.ID, o.finals, o.final)
		}
	}
}

// TestChaosStreamLeaderRestarts: the node that leads the calls stream
// stops mid-batch and starts again. No durable call is lost.
func TestChaosStreamLeaderRestarts(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	tk := chaosToolkit(t, &l, 300*time.Millisecond)
	w1 := chaosWorker(t, cl, 0, tk, "w1")
	w2 := chaosWorker(t, cl, 1, tk, "w2")
	c := newClient(t, clusterConn(t, cl, 2), &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	waitWorkers(t, c, "w1", "w2")
	js := natstest.JS(t, clusterConn(t, cl, 2))
	leader := func() int {
		st, err := js.Stream(ctxT(t), "toolbus_calls")
		if err != nil || st.CachedInfo().Cluster == nil {
			return -1
		}
		for i := range 3 {
			if st.CachedInfo().Cluster.Leader == fmt.Sprintf("n%d", i+1) {
				return i
			}
		}
		return -1
	}
	natstest.WaitFor(t, "a calls stream leader", func() bool { return leader() >= 0 })
	lead := leader()
	t.Logf("the calls stream's leader is node %d", lead)
	down := afterwards(func() bool { return w1.InFlight()+w2.InFlight() > 4 }, func() {
		cl.Stop(lead)
		time.Sleep(time.Second)
		cl.Start(lead)
	})
	outs := batch(c, mixed("slr", 12), 20)
	<-down
	cl.WaitReady()
	settle(t, w1, w2)
	t.Logf("finals: %v", checkContract(t, &l, outs))
}

// TestChaosCancelWorkerNodeDown: a core call of a tool that may not run
// again takes effect while its worker's node is down; its caller cancels
// it then, and the worker is silent past the stall timeout. The call was
// never going to be sent again, and the tool may have run: the final
// says worker_lost, not that the call was cancelled before a resend.
func TestChaosCancelWorkerNodeDown(t *testing.T) {
	if testing.Short() {
		t.Skip("a cluster under faults")
	}
	cl := natstest.NewCluster(t)
	var l ledger
	release := make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("charge", "Charge once.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		l.add(call.Key())
		<-release // the charge is made whatever comes
		l.add(call.Key() + "-done")
		return w.Write(toolkit.Text("charged"))
	}))
	// Only node 0: the worker stays away while it is down.
	wnc := nodeConn(t, cl, 0)
	w := serve(t, wnc, tk, &bus.WorkerOptions{Instance: "w1"})
	c := newClient(t, clusterConn(t, cl, 2), &bus.ClientOptions{Heartbeat: 200 * time.Millisecond})
	waitWorkers(t, c, "w1")
	done := make(chan outcome, 1)
	go func() {
		call := toolkit.ToolCall{ID: "cwd-1", Name: "charge"}
		o := outcome{call: call}
		o.finals, o.final = one(c, ctxT(t), call)
		done <- o
	}()
	natstest.WaitFor(t, "the call to run", func() bool { return w.InFlight() == 1 })
	cl.Stop(0)
	close(release)
	natstest.WaitFor(t, "the charge", func() bool { return l.get("cwd-1-done") == 1 })
	if err := c.Cancel("cwd-1"); err != nil {
		t.Fatal(err)
	}
	o := <-done
	cl.Start(0)
	if o.finals != 1 || o.final.Code != toolkit.CodeWorkerLost {
		t.Fatalf("%d finals, the last %s %q; the tool ran to its end", o.finals, o.final.Code, o.final.Text())
	}
}
