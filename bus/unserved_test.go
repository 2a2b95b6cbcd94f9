package bus_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// slowEcho echoes after a short sleep: calls pile up on a worker, so some
// are on their way to it when its tool is removed.
func slowEcho(ran *atomic.Int64) *toolkit.Tool {
	return toolkit.Func("echo", "Echo the text back, after a moment.",
		func(ctx context.Context, in echoIn) (string, error) {
			ran.Add(1)
			time.Sleep(2 * time.Millisecond)
			return in.Text, nil
		})
}

// removeUnderLoad calls echo n times from many goroutines and removes it
// from tk once the calls are under way; it returns the finals by call.
func removeUnderLoad(t *testing.T, c *bus.Client, tk *toolkit.Toolkit, ran *atomic.Int64, durable bool, n int) []*toolkit.Response {
	t.Helper()
	finals := make([]*toolkit.Response, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				finals[i] = c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: durable, Input: map[string]any{"text": strconv.Itoa(i)}})
			}
		})
	}
	for i := range n {
		if i == n/4 {
			go func() {
				for ran.Load() < int64(n/8) {
					time.Sleep(time.Millisecond)
				}
				tk.Remove("echo")
			}()
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return finals
}

// TestUnservedCallsPassedOn: a tool removed from one worker of a queue
// group while its calls are on their way there (delivered to the worker,
// not yet run) loses none of them to not_found: the worker passes them on
// to the group, where another worker serves the tool.
func TestUnservedCallsPassedOn(t *testing.T) {
	s := natstest.Embedded(t, false)
	var ranA, ranB atomic.Int64
	tkA, tkB := toolkit.New(nil), toolkit.New(nil)
	mustAdd(t, tkA, slowEcho(&ranA))
	mustAdd(t, tkB, slowEcho(&ranB))
	serve(t, natstest.Connect(t, s), tkA, &bus.WorkerOptions{Instance: "a", MaxInFlight: 64})
	serve(t, natstest.Connect(t, s), tkB, &bus.WorkerOptions{Instance: "b", MaxInFlight: 64})
	c := newClient(t, natstest.Connect(t, s), nil)
	const n = 400
	for i, r := range removeUnderLoad(t, c, tkA, &ranA, false, n) {
		if r.State != toolkit.StateSuccess || r.Text() != strconv.Itoa(i) {
			t.Errorf("call %d, echo removed from worker a meanwhile: %s %s %q", i, r.State, r.Code, r.Text())
		}
	}
	if ranA.Load() == 0 || ranB.Load() == 0 {
		t.Fatalf("the calls ran %d times on a, %d on b: the test needs both", ranA.Load(), ranB.Load())
	}
}

// TestUnservedDurableCallsHandedBack: the same on the durable path. A
// call of a read-only or idempotent tool is given back to the queue,
// where the other worker takes it; one of another tool, which must not
// run twice, is answered unavailable saying it did not run.
func TestUnservedDurableCallsHandedBack(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []toolkit.Option
		repeatable bool
	}{
		{"idempotent", []toolkit.Option{toolkit.WithIdempotency(toolkit.Idempotent)}, true},
		{"not idempotent", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := natstest.Embedded(t, true)
			var ranA, ranB atomic.Int64
			tkA, tkB := toolkit.New(nil), toolkit.New(nil)
			mustAdd(t, tkA, slowEcho(&ranA), tc.opts...)
			mustAdd(t, tkB, slowEcho(&ranB), tc.opts...)
			for _, w := range []struct {
				name string
				tk   *toolkit.Toolkit
			}{{"a", tkA}, {"b", tkB}} {
				nc := natstest.Connect(t, s)
				serve(t, nc, w.tk, &bus.WorkerOptions{Instance: w.name, MaxInFlight: 64,
					Durable: &bus.DurableOptions{JetStream: natstest.JS(t, nc)}})
			}
			c := newClient(t, natstest.Connect(t, s), nil)
			const n = 300
			didNotRun := 0
			for i, r := range removeUnderLoad(t, c, tkA, &ranA, true, n) {
				switch {
				case r.State == toolkit.StateSuccess && r.Text() == strconv.Itoa(i):
				case !tc.repeatable && r.Code == toolkit.CodeUnavailable && r.Metadata["worker"] == "a":
					didNotRun++
					if want := "did not run"; !strings.Contains(r.Text(), want) {
						t.Errorf("call %d: %q does not say %q", i, r.Text(), want)
					}
				default:
					t.Errorf("call %d, echo removed from worker a meanwhile: %s %s %q", i, r.State, r.Code, r.Text())
				}
			}
			t.Logf("ran on a %d, on b %d, answered as not run %d", ranA.Load(), ranB.Load(), didNotRun)
			if got := int(ranA.Load() + ranB.Load()); got != n-didNotRun {
				t.Errorf("the tool ran %d times for %d calls, %d answered as not run", got, n, didNotRun)
			}
			if ranA.Load() == 0 || ranB.Load() == 0 {
				t.Fatalf("the calls ran %d times on a, %d on b: the test needs both", ranA.Load(), ranB.Load())
			}
		})
	}
}

// TestUnservedPinnedCall: a call on a worker's pinned subject for a tool
// the worker does not serve is passed on to the tool's queue group, once:
// passed on already, it is answered not_found.
func TestUnservedPinnedCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	ncA := natstest.Connect(t, s)
	serve(t, ncA, toolkit.New(nil), &bus.WorkerOptions{Instance: "a", Sessions: &bus.SessionsOptions{JetStream: natstest.JS(t, ncA)}})
	tkB := toolkit.New(nil)
	mustAdd(t, tkB, echoTool())
	serve(t, natstest.Connect(t, s), tkB, &bus.WorkerOptions{Instance: "b"})
	nc := natstest.Connect(t, s)
	call := func(id string, hdr nats.Header) *wire.Frame {
		t.Helper()
		return pinnedCall(t, nc, "a", "echo", id, hdr)
	}
	if f := call("c1", nil); f.Final.State != toolkit.StateSuccess || f.Final.Text() != "c1" || f.Final.Metadata[wire.MetaWorker] != "b" {
		t.Fatalf("a call of echo on worker a's pinned subject: %+v", f.Final)
	}
	if f := call("c2", nats.Header{wire.HeaderUnserved: {"x"}}); f.Final.Code != toolkit.CodeNotFound || f.Final.Metadata[wire.MetaWorker] != "a" {
		t.Fatalf("a call passed on once already: %+v", f.Final)
	}
	// Passed on to a queue group nobody subscribes to: the server's
	// no-responders status comes back to worker a, which answers.
	if f := pinnedCall(t, nc, "a", "nobody", "c3", nil); f.Final.Code != toolkit.CodeNotFound || f.Final.Metadata[wire.MetaWorker] != "a" {
		t.Fatalf("a call of a tool nobody serves: %+v", f.Final)
	}
}

// pinnedCall sends a call on worker instance's pinned subject and returns
// its one frame.
func pinnedCall(t *testing.T, nc *nats.Conn, instance, tool, id string, hdr nats.Header) *wire.Frame {
	t.Helper()
	{
		data, err := wire.Msgpack.Marshal(&wire.Request{ID: id, Input: map[string]any{"text": id}})
		if err != nil {
			t.Fatal(err)
		}
		m, err := nc.RequestMsg(&nats.Msg{Subject: wire.PinnedSubject(instance, tool, ""), Header: hdr, Data: data}, guard)
		if err != nil {
			t.Fatal(err)
		}
		var f wire.Frame
		if err := wire.Msgpack.Unmarshal(m.Data, &f); err != nil || f.Final == nil {
			t.Fatalf("%v: %+v", err, f)
		}
		return &f
	}
}

// TestUnservedAlone: a worker whose tool is removed while its calls are on
// their way, and which no other worker of its group serves, answers them
// not_found at once (the no-responders status of the call passed on),
// never leaving a caller to its stall timeout.
func TestUnservedAlone(t *testing.T) {
	s := natstest.Embedded(t, false)
	var ran atomic.Int64
	tk := toolkit.New(nil)
	mustAdd(t, tk, slowEcho(&ran))
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "a", MaxInFlight: 64})
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{MaxAttempts: 1})
	notFound := 0
	for i, r := range removeUnderLoad(t, c, tk, &ran, false, 400) {
		switch {
		case r.State == toolkit.StateSuccess && r.Text() == strconv.Itoa(i):
		case r.Code == toolkit.CodeNotFound:
			notFound++
		default:
			t.Errorf("call %d, echo removed meanwhile: %s %s %q", i, r.State, r.Code, r.Text())
		}
	}
	if notFound == 0 {
		t.Fatal("no call was answered not_found: the test removed echo too late")
	}
}
