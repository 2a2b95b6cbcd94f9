package main_test

// The reliability suite: faults against worker processes on a real
// 3-node NATS cluster (in-process nodes on loopback ports, R3 buckets and
// calls stream). Each test is bounded in time and asserts that every call
// got exactly one final; on the durable path, that no call of a read-only
// or idempotent tool was lost; on the core path, that a lost call ended
// worker_lost. Run it alone with
//
//	go test ./cmd/worker -run Reliability -v

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/internal/ostest"
	"github.com/toolbus/toolbus/toolkit"
)

// reliableConfig is the workers' configuration: quick redelivery, R3.
func reliableConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "worker.yaml")
	mustWrite(t, cfg, `builtins:
  workspace: ws
  tools: [{name: echo}, {name: sleep}, {name: write_text_file}]
durable:
  ack_wait: 2s
  replicas: 3
`)
	return cfg
}

// clusterWorker starts a worker process on every node of the cluster.
func clusterWorker(t *testing.T, cl *natstest.TestCluster, cfg, instance string) *worker {
	t.Helper()
	return startWorker(t, "--nats", cl.URLs(), "--kv-replicas", "3", "--config", cfg, "--instance", instance)
}

// callOnce runs a call and checks it yields exactly one final.
func callOnce(t *testing.T, ctx context.Context, c *bus.Client, call toolkit.ToolCall) *toolkit.Response {
	var final *toolkit.Response
	finals := 0
	for ev := range c.Call(ctx, call) {
		if ev.Final != nil {
			finals++
			final = ev.Final
		}
	}
	if finals != 1 {
		t.Errorf("call %s: %d finals", call.ID, finals)
	}
	return final
}

// waitInstances waits until the client's fleet lists exactly these
// instances.
func waitInstances(t *testing.T, c *bus.Client, ids ...string) {
	t.Helper()
	natstest.WaitFor(t, fmt.Sprintf("the fleet to be %v", ids), func() bool {
		f, err := c.Fleet(secureCtx(t))
		if err != nil {
			return false
		}
		have := map[string]bool{}
		for _, in := range f.Instances() {
			have[in.ID] = true
		}
		for _, id := range ids {
			if !have[id] {
				return false
			}
		}
		return true
	})
}

// load runs n calls, at most par at a time, and returns their finals.
func load(t *testing.T, c *bus.Client, n, par int, call func(i int) toolkit.ToolCall) []*toolkit.Response {
	out := make([]*toolkit.Response, n)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			out[i] = callOnce(t, ctx, c, call(i))
		})
	}
	wg.Wait()
	return out
}

func codes(rs []*toolkit.Response) map[toolkit.Code]int {
	m := map[toolkit.Code]int{}
	for _, r := range rs {
		if r != nil {
			m[r.Code]++
		}
	}
	return m
}

// TestReliabilityKillWorker: kill -9 a worker mid-call. On the core path
// its calls end worker_lost (or, read-only, are retried on the other
// worker by the client); on the durable path none is lost.
func TestReliabilityKillWorker(t *testing.T) {
	cl := natstest.NewCluster(t)
	cfg := reliableConfig(t)
	workers := map[string]*worker{"w1": clusterWorker(t, cl, cfg, "w1"), "w2": clusterWorker(t, cl, cfg, "w2")}
	connect := func(opts *bus.ClientOptions) *bus.Client {
		c, err := bus.NewClient(natstest.URLConn(t, cl.URLs()), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	observer := connect(nil)
	waitInstances(t, observer, "w1", "w2")
	n := 0
	// kill kills one worker after a while (calls then run on both) and
	// starts another; the returned channel is closed once that one is
	// ready. Each subtest waits for it, so no two run at once.
	kill := func(after time.Duration) (replaced <-chan struct{}) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(after)
			name := ""
			for id, w := range workers {
				name = id
				w.cmd.Process.Kill()
				delete(workers, id)
				break
			}
			n++
			id := fmt.Sprint("w", len(workers)+n+1)
			workers[id] = clusterWorker(t, cl, cfg, id)
			t.Logf("killed %s, started %s", name, id)
		}()
		return done
	}

	t.Run("core", func(t *testing.T) {
		c := connect(&bus.ClientOptions{MaxAttempts: 1, Heartbeat: 100 * time.Millisecond})
		defer func(replaced <-chan struct{}) { <-replaced }(kill(700 * time.Millisecond))
		rs := load(t, c, 20, 20, func(i int) toolkit.ToolCall {
			return toolkit.ToolCall{ID: fmt.Sprint("core-", i), Name: "sleep", Input: map[string]any{"seconds": 2}}
		})
		got := codes(rs)
		if got[toolkit.CodeWorkerLost] == 0 || got[""] == 0 || got[""]+got[toolkit.CodeWorkerLost] != 20 {
			t.Fatalf("finals by code %v: want worker_lost for the killed worker's calls, success for the others", got)
		}
		t.Logf("finals %v (stall timeout 300ms)", got)
	})

	t.Run("core retried", func(t *testing.T) {
		c := connect(&bus.ClientOptions{Heartbeat: 100 * time.Millisecond})
		defer func(replaced <-chan struct{}) { <-replaced }(kill(700 * time.Millisecond))
		rs := load(t, c, 20, 20, func(i int) toolkit.ToolCall {
			return toolkit.ToolCall{ID: fmt.Sprint("retried-", i), Name: "sleep", Input: map[string]any{"seconds": 2}}
		})
		retried := 0
		for _, r := range rs {
			if r.Metadata[wire.MetaAttempts] != nil {
				retried++
			}
		}
		if got := codes(rs); got[""] != 20 || retried == 0 {
			t.Fatalf("read-only calls with retries: finals %v, %d retried; want all successful, some retried", got, retried)
		}
	})

	t.Run("durable", func(t *testing.T) {
		c := connect(&bus.ClientOptions{Heartbeat: 100 * time.Millisecond})
		defer func(replaced <-chan struct{}) { <-replaced }(kill(700 * time.Millisecond))
		rs := load(t, c, 20, 20, func(i int) toolkit.ToolCall {
			return toolkit.ToolCall{ID: fmt.Sprint("durable-", i), Name: "sleep", Durable: true, Input: map[string]any{"seconds": 2}}
		})
		redelivered := 0
		for _, r := range rs {
			if r.Metadata[wire.MetaAttempts] != nil {
				redelivered++
			}
		}
		if got := codes(rs); got[""] != 20 || redelivered == 0 {
			t.Fatalf("durable calls: finals %v, %d redelivered; want all successful, some redelivered", got, redelivered)
		}
		t.Logf("durable: 20 of 20 completed, %d delivered again", redelivered)
	})
}

// TestReliabilityNodeRestart: a NATS node restarts under load. Durable
// calls of a read-only tool all complete; core calls each end once.
func TestReliabilityNodeRestart(t *testing.T) {
	cl := natstest.NewCluster(t)
	cfg := reliableConfig(t)
	clusterWorker(t, cl, cfg, "w1")
	clusterWorker(t, cl, cfg, "w2")
	c, err := bus.NewClient(natstest.URLConn(t, cl.URLs()), &bus.ClientOptions{Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitInstances(t, c, "w1", "w2")
	go func() {
		time.Sleep(time.Second)
		cl.Stop(1)
		time.Sleep(2 * time.Second)
		cl.Start(1)
	}()
	var core []*toolkit.Response
	done := make(chan struct{})
	go func() {
		defer close(done)
		core = load(t, c, 60, 10, func(i int) toolkit.ToolCall {
			return toolkit.ToolCall{ID: fmt.Sprint("core-", i), Name: "sleep", Input: map[string]any{"seconds": 0.5}}
		})
	}()
	durable := load(t, c, 60, 10, func(i int) toolkit.ToolCall {
		return toolkit.ToolCall{ID: fmt.Sprint("durable-", i), Name: "sleep", Durable: true, Input: map[string]any{"seconds": 0.5}}
	})
	<-done
	if got := codes(durable); got[""] != 60 {
		for _, r := range durable {
			if r.Code != "" {
				t.Log(r.ID, r.Code, r.Text())
			}
		}
		t.Fatalf("durable calls across a node restart: finals %v; want all 60 successful", got)
	}
	t.Logf("core calls across the restart: %v; durable: %v", codes(core), codes(durable))
}

// TestReliabilityStoppedWorker: a worker frozen (SIGSTOP) past the stall
// timeout loses its calls (worker_lost); thawed, its late frames change
// nothing for the caller, and it serves again.
func TestReliabilityStoppedWorker(t *testing.T) {
	w := startWorker(t)
	c, err := bus.NewClient(natstest.URLConn(t, w.url), &bus.ClientOptions{MaxAttempts: 1, Heartbeat: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		time.Sleep(300 * time.Millisecond)
		w.cmd.Process.Signal(ostest.Stop)
	}()
	rs := load(t, c, 10, 10, func(i int) toolkit.ToolCall {
		return toolkit.ToolCall{ID: fmt.Sprint("frozen-", i), Name: "sleep", Input: map[string]any{"seconds": 1}}
	})
	if got := codes(rs); got[toolkit.CodeWorkerLost] != 10 {
		t.Fatalf("calls of a frozen worker: %v; want all worker_lost", got)
	}
	w.cmd.Process.Signal(ostest.Cont)
	// Its late frames (and the finals of the calls it still runs) arrive
	// for calls that ended: each yielded its one final already (callOnce).
	time.Sleep(1500 * time.Millisecond)
	ctx := secureCtx(t)
	if r := callOnce(t, ctx, c, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "thawed"}}); r.Text() != "thawed" {
		t.Fatalf("after SIGCONT: %+v", r)
	}
}

// TestReliabilityDeadlines: a call whose tool would outlive its deadline
// is ended by the worker at the deadline, and the worker says so.
func TestReliabilityDeadlines(t *testing.T) {
	w := startWorker(t)
	c, err := bus.NewClient(natstest.URLConn(t, w.url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	r := callOnce(t, ctx, c, toolkit.ToolCall{Name: "sleep", Input: map[string]any{"seconds": 60}})
	if r.Code != toolkit.CodeTimeout || r.Metadata[wire.MetaWorker] == nil {
		t.Fatalf("a call past its deadline: %+v; want timeout from the worker", r)
	}
}

// TestReliabilityCancelStorm: thousands of cancels, for running calls and
// for ids nobody knows, while calls run: each call ends once, the
// cancelled interrupted, and the worker serves on.
func TestReliabilityCancelStorm(t *testing.T) {
	w := startWorker(t)
	nc := natstest.URLConn(t, w.url)
	c, err := bus.NewClient(nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const running = 100
	var wg sync.WaitGroup
	rs := make([]*toolkit.Response, running)
	for i := range running {
		wg.Go(func() {
			rs[i] = callOnce(t, secureCtx(t), c, toolkit.ToolCall{ID: fmt.Sprint("storm-", i), Name: "sleep", Input: map[string]any{"seconds": 30}})
		})
	}
	time.Sleep(500 * time.Millisecond)
	for i := range 5000 {
		id := fmt.Sprint("nobody-", i)
		if i%50 < running/2 && i < 5000/2 {
			id = fmt.Sprint("storm-", i%running)
		}
		nc.PublishMsg(&nats.Msg{Subject: wire.CancelSubject("", id), Header: nats.Header{wire.HeaderVersion: {wire.Version}}})
	}
	for i := range running { // and the rest, once
		c.Cancel(fmt.Sprint("storm-", i))
	}
	wg.Wait()
	if got := codes(rs); got[toolkit.CodeInterrupted] != running {
		t.Fatalf("cancelled calls: %v; want all interrupted", got)
	}
	if r := callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": "calm"}}); r.Text() != "calm" {
		t.Fatalf("after the storm: %+v", r)
	}
}

// TestReliabilitySlowConsumer: a caller that stops reading its socket is
// cut off by the server as a slow consumer; the worker finishes its call
// and serves the other callers as before.
func TestReliabilitySlowConsumer(t *testing.T) {
	s := natstest.ServerWith(t, func(o *server.Options) {
		o.DontListen, o.Host, o.Port = false, "127.0.0.1", server.RANDOM_PORT
		o.MaxPending, o.MaxPayload = 256<<10, 128<<10
		o.WriteDeadline = 500 * time.Millisecond
	})
	tk := toolkit.New(nil)
	chunk := strings.Repeat("x", 16<<10)
	if err := tk.Add(toolkit.Stream("flood", "Write 4 MiB in 16 KiB chunks.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		for range 256 {
			if err := w.Write(toolkit.Text(chunk)); err != nil {
				return err
			}
		}
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	if err := tk.Add(toolkit.Func("echo", "Echo.", func(ctx context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})); err != nil {
		t.Fatal(err)
	}
	wnc := natstest.URLConn(t, s.ClientURL())
	wk, err := bus.Serve(wnc, tk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Stop(context.Background())

	// The slow caller: a raw NATS client that subscribes, calls, and
	// never reads again.
	// A small receive buffer: the kernel does not absorb what the caller
	// does not read.
	dialer := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = ostest.SetRecvBuffer(fd, 4096) }); err != nil {
			return err
		}
		return serr
	}}
	conn, err := dialer.Dial("tcp", strings.TrimPrefix(s.ClientURL(), "nats://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil { // INFO
		t.Fatal(err)
	}
	body := `{"id":"slow-1"}`
	fmt.Fprintf(conn, "CONNECT {\"verbose\":false,\"headers\":true}\r\nSUB _INBOX.slow.* 1\r\nHPUB tools.call.flood _INBOX.slow.1 %d %d\r\nNATS/1.0\r\nContent-Type: application/json\r\n\r\n%s\r\n",
		len("NATS/1.0\r\nContent-Type: application/json\r\n\r\n"), len("NATS/1.0\r\nContent-Type: application/json\r\n\r\n")+len(body), body)

	c, err := bus.NewClient(natstest.URLConn(t, s.ClientURL()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	natstest.WaitFor(t, "the slow caller's call to end on the worker", func() bool {
		return s.NumSlowConsumers() > 0 && wk.InFlight() == 0
	})
	t.Logf("slow consumers %d, in flight %d", s.NumSlowConsumers(), wk.InFlight())
	var got []string
	for i := range 20 {
		r := callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "echo", Input: map[string]any{"text": fmt.Sprint(i)}})
		got = append(got, r.Text())
	}
	if strings.Join(got, ",") != "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19" {
		t.Fatalf("the other caller after a slow consumer: %v", got)
	}
	// A caller that reads gets the flood whole. On a starved machine the
	// server's small pending limit may cut it off too: its final then
	// says how much is missing, or, when the server closed its
	// connection as a slow consumer as well, the call does not succeed
	// (it keeps the output it had).
	r := callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "flood"})
	if len(r.Text()) != 256*len(chunk) && r.Metadata[wire.MetaLostChunks] == nil && r.State == toolkit.StateSuccess {
		t.Fatalf("a reading caller's flood: %d bytes, a success, and no lost chunks said: %v", len(r.Text()), r.Metadata)
	}
	if len(r.Text()) != 256*len(chunk) {
		t.Logf("the reading caller was cut off too: %s %s, %d bytes, metadata %v", r.State, r.Code, len(r.Text()), r.Metadata)
	}
}

// TestReliabilityManyInFlight: 10,000 sleeping calls at once across three
// workers all end, and the goroutines and heap come back to where they
// were.
func TestReliabilityManyInFlight(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("nap", "Sleep a second.", func(ctx context.Context, in struct{}) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(time.Second):
			return "up", nil
		}
	})); err != nil {
		t.Fatal(err)
	}
	var ws []*bus.Worker
	for i := range 3 {
		w, err := bus.Serve(natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: fmt.Sprint("m", i), MaxInFlight: 4000})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop(context.Background())
		ws = append(ws, w)
	}
	// What is measured is memory, not liveness: a 2-core machine running
	// 10,000 calls under the race detector may send heartbeats late.
	c, err := bus.NewClient(natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	callOnce(t, secureCtx(t), c, toolkit.ToolCall{Name: "nap"})
	var mem runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&mem)
	heap0, goroutines0 := mem.HeapInuse, runtime.NumGoroutine()

	rs := load(t, c, 10_000, 10_000, func(i int) toolkit.ToolCall { return toolkit.ToolCall{Name: "nap"} })
	if got := codes(rs); got[""] != 10_000 {
		t.Fatalf("10,000 calls: %v", got)
	}
	rs = nil
	natstest.WaitFor(t, "goroutines and heap back to the baseline", func() bool {
		runtime.GC() // twice: pooled buffers go at the second
		runtime.GC()
		runtime.ReadMemStats(&mem)
		return runtime.NumGoroutine() <= goroutines0+16 && mem.HeapInuse <= heap0+24<<20 // maps grown to 10,000 entries do not shrink
	})
	t.Logf("goroutines %d → %d, heap in use %d → %d KiB (live %d KiB)", goroutines0, runtime.NumGoroutine(), heap0>>10, mem.HeapInuse>>10, mem.HeapAlloc>>10)
}
