package bus_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// durableWorker serves tk with the durable path on, on its own connection
// (closing it is the worker's death).
func durableWorker(t *testing.T, s *embedded.Server, tk *toolkit.Toolkit, ackWait time.Duration, instance string) (*bus.Worker, *nats.Conn) {
	t.Helper()
	return startDurableWorker(t, s, tk, bus.WorkerOptions{Instance: instance}, ackWait, false)
}

// startDurableWorker serves tk with o and the durable path on (and kept
// results with keep), on its own connection, stopped when the test ends.
func startDurableWorker(t *testing.T, s *embedded.Server, tk *toolkit.Toolkit, o bus.WorkerOptions, ackWait time.Duration, keep bool) (*bus.Worker, *nats.Conn) {
	t.Helper()
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	var d bus.DurableOptions // o.Durable's other settings kept
	if o.Durable != nil {
		d = *o.Durable
	}
	d.JetStream, d.AckWait = js, ackWait
	o.Durable = &d
	if keep {
		o.Results = &bus.ResultsOptions{JetStream: js}
	}
	w, err := bus.Serve(nc, tk, &o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		w.Stop(ctx)
	})
	return w, nc
}

// killDurableWorker ends a worker as a crash would: its connection first,
// then its stop, with no time for its calls.
func killDurableWorker(w *bus.Worker, nc *nats.Conn) {
	nc.Close()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	w.Stop(gone)
}

func TestDurableCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	mustAdd(t, tk, toolkit.Stream("count", "Count to three.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for i := 1; i <= 3; i++ {
			if err := w.Write(toolkit.Text(fmt.Sprint(i))); err != nil {
				return err
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}))
	durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "kept"}}); r.Text() != "kept" || r.Metadata[wire.MetaWorker] != "w1" {
		t.Fatalf("durable echo: %+v", r)
	}
	var chunks int
	var final *toolkit.Response
	for ev := range c.Call(ctxT(t), toolkit.ToolCall{Name: "count", Durable: true}) {
		if ev.Chunk != nil {
			chunks++
		}
		final = ev.Final
	}
	if chunks != 3 || final.Text() != "123" {
		t.Fatalf("durable stream: %d chunks, final %+v", chunks, final)
	}
	// The same id again within the dedup window is not run again.
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "once", Name: "echo", Durable: true, Input: map[string]any{"text": "1"}}); r.Text() != "1" {
		t.Fatalf("first send: %+v", r)
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{ID: "once", Name: "echo", Durable: true, Input: map[string]any{"text": "2"}}); r.Code != toolkit.CodeInvalidInput {
		t.Fatalf("second send of the same id: %+v", r)
	}
}

// TestDurableRunnersEnd: pulled calls run on runners that wait for the
// next call (at most 16 of them) and end when the worker stops.
func TestDurableRunnersEnd(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	w, _ := durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, natstest.Connect(t, s), nil)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": fmt.Sprint(i)}}); r.Text() != fmt.Sprint(i) {
				t.Errorf("call %d: %+v", i, r)
			}
		})
	}
	wg.Wait()
	runners := func() int {
		buf := make([]byte, 1<<22)
		return strings.Count(string(buf[:runtime.Stack(buf, true)]), "bus.(*runners).loop")
	}
	// Runners still ending their calls (the finals are out) wait or end.
	for end := time.Now().Add(guard); ; time.Sleep(10 * time.Millisecond) {
		n := runners()
		if n > 0 && n <= 16 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%v after the burst %d runners wait, want 1 to 16", guard, n)
		}
	}
	if err := w.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(guard); runners() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d runners left %v after the worker stopped", runners(), guard)
		}
	}
}

// TestDurableQueuedOnceLeaderBack: the calls stream (R3) has no leader
// for longer than one queueing attempt (two of its three nodes are
// down): the unanswered attempts are made again, and the call is queued
// and answered once a node is back.
func TestDurableQueuedOnceLeaderBack(t *testing.T) {
	cl := natstest.NewCluster(t)
	nodes := cl.Nodes()
	wnc := natstest.URLConn(t, nodes[0].ClientURL())
	js := natstest.JS(t, wnc)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	serve(t, wnc, tk, &bus.WorkerOptions{Instance: "w1", Durable: &bus.DurableOptions{JetStream: js, Replicas: 3},
		Results: &bus.ResultsOptions{JetStream: js, Replicas: 3}})
	c := newClient(t, natstest.URLConn(t, nodes[0].ClientURL()), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "before"}}); r.Text() != "before" {
		t.Fatalf("with the cluster whole: %+v", r)
	}
	cl.Stop(1)
	cl.Stop(2)
	go func() {
		time.Sleep(5 * time.Second) // past two attempts
		cl.Start(1)
	}()
	start := time.Now()
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "after"}})
	if r.Text() != "after" {
		t.Fatalf("queued while the stream had no leader: %+v", r)
	}
	if took := time.Since(start); took < 4*time.Second {
		t.Fatalf("answered after %v, before the stream could have taken it", took)
	}
}

// TestDurableQuickToolTurnedSlow: a tool quick for many durable calls
// runs on its pull loop; when one of its calls blocks, the calls pulled
// behind it still run (the clock hands the loop on), long before the
// blocked call ends; and the worker still stops in bounded time.
func TestDurableQuickToolTurnedSlow(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	release := make(chan struct{})
	unblock := sync.OnceFunc(func() { close(release) })
	t.Cleanup(unblock)
	mustAdd(t, tk, toolkit.Func("flip", "Quick unless told to block.", func(ctx context.Context, in struct {
		Block bool `json:"block,omitempty"`
	}) (string, error) {
		if in.Block {
			<-release // deaf to its context
		}
		return "ok", nil
	}))
	w, c := quickOnPullLoop(t, s, tk, "flip")
	blocked := make(chan *toolkit.Response, 1)
	go func() {
		blocked <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "flip", Durable: true, Input: map[string]any{"block": true}})
	}()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "flip", Durable: true}); r.State != toolkit.StateSuccess {
				t.Errorf("flip %d behind a blocked call: %+v", i, r)
			}
		})
	}
	wg.Wait()
	select {
	case r := <-blocked:
		t.Fatalf("the blocked call ended before it was released: %+v", r)
	default:
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		w.Stop(ctx) // the blocked call is abandoned after AbandonAfter (2 s)
	}()
	select {
	case <-stopped:
	case <-time.After(guard): // the call is released only when the test ends
		t.Fatalf("Stop with a 1 s grace and a call blocked on the pull loop still running after %v", guard)
	}
	if r := <-blocked; r.State == toolkit.StateSuccess {
		t.Fatalf("the blocked call, abandoned at stop: %+v", r)
	}
}

// quickOnPullLoop serves tk with the durable path on and makes tool quick
// (its calls then run on its pull loop) with 100 durable calls.
func quickOnPullLoop(t *testing.T, s *embedded.Server, tk *toolkit.Toolkit, tool string) (*bus.Worker, *bus.Client) {
	t.Helper()
	w, _ := durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, natstest.Connect(t, s), nil)
	for range 100 {
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: tool, Durable: true}); r.State != toolkit.StateSuccess {
			t.Fatalf("%s: %+v", tool, r)
		}
	}
	return w, c
}

// TestDurableStopWithRemovedToolInline: a tool is removed while its pull
// loop runs one of its calls (one that ends with its context): the loop
// is still handed on (the clock watched only the loops of tools served),
// and ends while the call runs, and Stop ends within its grace.
func TestDurableStopWithRemovedToolInline(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	running, ended := make(chan struct{}, 1), make(chan struct{})
	mustAdd(t, tk, toolkit.Func("flip", "Quick unless told to block.", func(ctx context.Context, in struct {
		Block bool `json:"block,omitempty"`
	}) (string, error) {
		if in.Block {
			tk.Remove("flip") // the tool goes away while this call runs
			running <- struct{}{}
			<-ctx.Done()
			close(ended)
			return "", ctx.Err()
		}
		return "ok", nil
	}))
	w, c := quickOnPullLoop(t, s, tk, "flip")
	// No deadline: the call ends only as Stop ends it.
	callCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go c.Invoke(callCtx, toolkit.ToolCall{Name: "flip", Durable: true, Input: map[string]any{"block": true}})
	<-running
	natstest.WaitFor(t, "the removed tool's pull loop, running its call, to be handed on and end", func() bool {
		select {
		case <-ended:
			t.Fatal("the removed tool's call ended before its pull loop was handed on")
		default:
		}
		return bus.DurableLoops(w) == 0
	})
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		stopped <- w.Stop(ctx)
	}()
	select {
	case <-stopped:
	case <-time.After(guard):
		t.Fatalf("Stop with a 1 s grace still running after %v", guard)
	}
}

// TestDurableClientCloseReleasesPublisher: a client queues durable calls
// through its own inbox subscription; closing it releases that
// subscription and its connection watch on a connection that lives on.
// (nats.go's asynchronous publisher, used before, left its listener
// goroutine waiting on a nil channel when cleaned up before it ran.)
func TestDurableClientCloseReleasesPublisher(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	durableWorker(t, s, tk, 0, "w1")
	nc := natstest.Connect(t, s)
	publishers := func() int {
		buf := make([]byte, 1<<22)
		stacks := string(buf[:runtime.Stack(buf, true)])
		return strings.Count(stacks, "resetPendingAcksOnReconnect") + strings.Count(stacks, "watchConnection")
	}
	subs0, g0 := nc.NumSubscriptions(), publishers()
	const n = 20
	for range n {
		c, err := bus.NewClient(nc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "x"}}); r.Text() != "x" {
			t.Fatalf("%+v", r)
		}
		c.Close()
	}
	// One may stay: the connection's own request mux, shared by all. A
	// closed client's connection watch ends as soon as it runs.
	for end := time.Now().Add(guard); publishers() > g0 && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
	}
	if subs, g := nc.NumSubscriptions()-subs0, publishers()-g0; subs > 1 || g > 0 {
		t.Errorf("after %d clients closed: %d subscriptions and %d publisher goroutines left", n, subs, g)
	}
}

// TestDurableCancelledBeforeQueued: a durable call whose caller gives up
// while the calls stream does not exist yet is not stored and run later,
// when the stream appears.
func TestDurableCancelledBeforeQueued(t *testing.T) {
	s := natstest.Embedded(t, false)
	js := natstest.JS(t, natstest.Connect(t, s))
	c := newClient(t, natstest.Connect(t, s), nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "late", Name: "count", Durable: true}); r.State == toolkit.StateSuccess {
		t.Fatalf("%+v", r)
	}
	st, err := js.CreateStream(context.Background(), bus.CallsStreamConfig(time.Minute, 1))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the publisher's own retries came 250 ms apart
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs > 0 {
		t.Errorf("a call its caller cancelled was stored later: %d messages", info.State.Msgs)
	}
}

// TestDurableNoStream: without a worker that created the calls stream, a
// durable call says so, and names the workers on JetStream that do not
// create it (group state in memory, durable.off).
func TestDurableNoStream(t *testing.T) {
	s := natstest.Embedded(t, false)
	c := newClient(t, natstest.Connect(t, s), nil)
	r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true})
	if r.Code != toolkit.CodeUnavailable || !strings.Contains(r.Text(), "group state is in memory") {
		t.Fatalf("durable call without a stream: %+v", r)
	}
}

// TestDurableRedelivery: the worker running a durable call dies; an
// idempotent tool's call is delivered to another worker and the caller
// gets its result, with the attempt count, the tool the same key; a tool
// that may have effects is not run again.
func TestDurableRedelivery(t *testing.T) {
	s := natstest.Embedded(t, false)
	const ackWait = time.Second
	started := make(chan string, 8)
	var runs atomic.Int32
	newTK := func(hang bool) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		for _, idempotent := range []bool{true, false} {
			name, opts := "put", []toolkit.Option{toolkit.WithIdempotency(toolkit.Idempotent)}
			if !idempotent {
				name, opts = "charge", nil
			}
			mustAdd(t, tk, toolkit.Raw(name, "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
				func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
					runs.Add(1)
					started <- call.Key()
					if hang {
						<-ctx.Done() // the worker dies meanwhile
						return ctx.Err()
					}
					return w.Write(toolkit.Text("done"))
				}), opts...)
		}
		return tk
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	for _, tt := range []struct {
		tool string
		want toolkit.Code
	}{{"put", ""}, {"charge", toolkit.CodeWorkerLost}} {
		runs.Store(0)
		w1, nc1 := durableWorker(t, s, newTK(true), ackWait, "doomed-"+tt.tool)
		done := make(chan *toolkit.Response, 1)
		go func() {
			done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "k-" + tt.tool, Name: tt.tool, Durable: true})
		}()
		if key := <-started; key != "k-"+tt.tool {
			t.Fatalf("first attempt's key %q", key)
		}
		nc1.Close() // the worker is gone without a final
		gone, cancel := context.WithCancel(context.Background())
		cancel()
		w1.Stop(gone)
		heir, _ := durableWorker(t, s, newTK(false), ackWait, "heir-"+tt.tool)
		r := <-done
		heir.Stop(ctxT(t)) // the next round's first attempt is the doomed worker's
		if r.Code != tt.want {
			t.Fatalf("%s after its worker died: %+v", tt.tool, r)
		}
		if tt.want == "" {
			if r.Text() != "done" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" || <-started != "k-put" {
				t.Fatalf("put's second attempt: %+v", r)
			}
		} else if runs.Load() != 1 {
			t.Fatalf("charge ran %d times", runs.Load())
		}
	}
}

// TestDurableByDefault: a tool registered Durable is queued even when
// called on the core path; the caller is told, and gets the result.
func TestDurableByDefault(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool(), toolkit.Durable())
	durableWorker(t, s, tk, 0, "w1")
	nc := natstest.Connect(t, s)
	queued, err := nc.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, nc, nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "via the queue"}}); r.Text() != "via the queue" {
		t.Fatalf("%+v", r)
	}
	// Other replies come to the connection's inboxes all the while: the
	// wait for the queued frame is bounded as a whole.
	for deadline := time.Now().Add(guard); ; {
		m, err := queued.NextMsg(time.Until(deadline))
		if err != nil {
			t.Fatal("no queued frame reached the caller")
		}
		var f wire.Frame
		if wire.Msgpack.Unmarshal(m.Data, &f) == nil && f.Kind == wire.KindQueued {
			return
		}
	}
}

// TestDurableHandBackOnStop: a worker that stops past its grace period
// gives its durable calls of idempotent tools back to the queue; another
// worker runs them and the caller gets that result, not "interrupted".
func TestDurableHandBackOnStop(t *testing.T) {
	s := natstest.Embedded(t, false)
	started := make(chan struct{}, 2)
	newTK := func(hang bool) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("sync", "Sync the mirror.", func(ctx context.Context, in struct{}) (string, error) {
			started <- struct{}{}
			if hang {
				<-ctx.Done()
				return "", ctx.Err()
			}
			return "synced", nil
		}), toolkit.WithIdempotency(toolkit.Idempotent))
		return tk
	}
	w1, _ := durableWorker(t, s, newTK(true), 0, "leaving")
	c := newClient(t, natstest.Connect(t, s), nil)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "sync", Durable: true}) }()
	<-started
	durableWorker(t, s, newTK(false), 0, "staying")
	grace, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	w1.Stop(grace)
	if r := <-done; r.Text() != "synced" || r.Metadata[wire.MetaWorker] != "staying" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != "2" {
		t.Fatalf("a call handed back at stop: %+v", r)
	}
}

// TestDurableExhausted: a call whose every delivery lost its worker ends
// worker_lost, once, from a live worker of the fleet, and leaves the queue.
func TestDurableExhausted(t *testing.T) {
	s := natstest.Embedded(t, false)
	// A delivery's worker is killed, and the survivor started, within
	// ackWait of the delivery (a running tool's worker says it is alive
	// every third of it), or the doomed worker, still up, answers the
	// exhausted call itself. The survivor answers ackWait after the last
	// worker's last sign of life; a caller that hears nothing on the last
	// delivery ends the call itself after its stall timeout, which must
	// be longer.
	const ackWait, maxDeliver = 2 * time.Second, 2
	started := make(chan int, 4)
	newWorker := func(instance string, hang bool) (*bus.Worker, *nats.Conn) {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw("put", "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				if hang {
					started <- 1
					<-ctx.Done() // the worker dies meanwhile
					return ctx.Err()
				}
				return w.Write(toolkit.Text("done"))
			}), toolkit.WithIdempotency(toolkit.Idempotent))
		return startDurableWorker(t, s, tk, bus.WorkerOptions{Instance: instance, Durable: &bus.DurableOptions{MaxDeliver: maxDeliver}}, ackWait, true)
	}
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond, StallTimeout: 3 * ackWait})
	// A worker first: a durable call of a tool no worker has served ends
	// not_found at once.
	w, nc := newWorker("doomed-0", true)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "doomed", Name: "put", Durable: true}) }()
	for i := range maxDeliver {
		select {
		case <-started:
		case r := <-done:
			t.Fatalf("delivery %d: the call ended before it started: %+v", i+1, r)
		}
		if i == maxDeliver-1 {
			// The fleet lives on: JetStream tells it the call's last
			// delivery went unanswered.
			newWorker("survivor", false)
		}
		killDurableWorker(w, nc)
		if i < maxDeliver-1 {
			w, nc = newWorker(fmt.Sprint("doomed-", i+1), true)
		}
	}
	r := <-done
	if r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaWorker] != "survivor" || fmt.Sprint(r.Metadata[wire.MetaAttempts]) != fmt.Sprint(maxDeliver) {
		t.Fatalf("an exhausted call: %+v", r)
	}
	if kept := c.Result(ctxT(t), "doomed"); kept.Code != toolkit.CodeWorkerLost {
		t.Fatalf("its kept result: %+v", kept)
	}
	// It leaves the queue (the worker that answered it removes it after
	// its final): nothing of it is delivered to anyone again.
	js := natstest.JS(t, natstest.Connect(t, s))
	st, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(guard); ; time.Sleep(20 * time.Millisecond) {
		info, err := st.Info(ctxT(t))
		if err == nil && info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the calls stream %v after it still holds it: %+v, %v", guard, info, err)
		}
	}
}

// TestEnqueueDoesNotHoldUpOtherCalls: queuing a durable-by-default call
// waits on JetStream; with JetStream not answering, calls of other tools
// still run (the reader taking calls passed that wait on).
func TestEnqueueDoesNotHoldUpOtherCalls(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("dq", "Durable by default.", func(ctx context.Context, in struct{}) (string, error) { return "ok", nil }), toolkit.Durable())
	mustAdd(t, tk, echoTool())
	durableWorker(t, s, tk, 0, "w1")
	nc := natstest.Connect(t, s)
	if err := natstest.JS(t, nc).DeleteStream(context.Background(), wire.StreamCalls); err != nil {
		t.Fatal(err)
	}
	// A responder that never answers: an unresponsive JetStream.
	if _, err := nc.Subscribe(wire.SubjectDurablePrefix+">", func(m *nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	c := newClient(t, nc, nil)
	for range 3 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c.Invoke(ctx, toolkit.ToolCall{Name: "dq"})
		}()
	}
	time.Sleep(100 * time.Millisecond) // let the durable calls be taken first (not a bound)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "hi"}}); r.Text() != "hi" {
		t.Fatalf("a plain call behind waiting enqueues: %+v", r)
	}
}

// TestDurableCloseWhileQueueing: a durable call waiting for the calls
// stream's acknowledgement ends when its client is closed, not after the
// queue's wait.
func TestDurableCloseWhileQueueing(t *testing.T) {
	s := natstest.Embedded(t, false)
	// Something takes the call's publish and never acknowledges it.
	silent, err := natstest.Connect(t, s).Subscribe(wire.DurableSubject("echo", ""), func(*nats.Msg) {})
	if err != nil {
		t.Fatal(err)
	}
	// Neither the queue's wait nor the call's context ends the wait
	// before the test's guard: only Close can.
	c, err := bus.NewClient(natstest.Connect(t, s), &bus.ClientOptions{QueueWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Durable: true}) }()
	for n, _ := silent.Delivered(); n == 0; n, _ = silent.Delivered() {
		time.Sleep(5 * time.Millisecond)
	}
	c.Close()
	select {
	case r := <-done:
		if r.State == toolkit.StateSuccess || !strings.Contains(r.Text(), "closed") {
			t.Errorf("a call queueing at Close: %+v", r)
		}
	case <-time.After(guard):
		t.Fatalf("a call queueing at Close still waits %v later", guard)
	}
}

// TestDurableByDefaultStopWhileQueueing: a worker that stops while it
// waits for the calls stream to acknowledge a call it queues (a
// durable-by-default tool's call, received on the core path) does not run
// that call itself: the stream may have stored it, and then the queue
// runs it. Here the stream stores calls and never acknowledges them.
func TestDurableByDefaultStopWhileQueueing(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	cfg := bus.CallsStreamConfig(time.Minute, 1)
	cfg.NoAck = true
	if _, err := natstest.JS(t, nc).CreateStream(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int32
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("put", "Store a value.", func(ctx context.Context, in struct{}) (string, error) {
		runs.Add(1)
		return "stored", nil
	}), toolkit.Durable())
	w, _ := durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, nc, nil)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "put"}) }()
	for runs.Load() == 0 { // stored, and run from the queue
		time.Sleep(time.Millisecond)
	}
	if r := <-done; r.Text() != "stored" {
		t.Fatalf("the queued call: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	w.Stop(ctx)
	if n := runs.Load(); n != 1 {
		t.Fatalf("the tool ran %d times; want once, from the queue", n)
	}
}
