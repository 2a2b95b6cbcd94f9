package bus_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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

// fullCancels makes the cancels stream on s before any worker does,
// bounded to a few records, and fills it with records of other calls:
// it refuses a new record.
func fullCancels(t *testing.T, s *embedded.Server) {
	t.Helper()
	const most = 4
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	cfg := bus.CancelsStreamConfig(1)
	cfg.MaxMsgs = most
	if _, err := js.CreateStream(ctxT(t), cfg); err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("")
	m.Header.Set(wire.HeaderVersion, "1")
	for i := range most {
		m.Subject = wire.CancelledSubject("", fmt.Sprint("other-", i))
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	natstest.WaitFor(t, "the cancels stream full", func() bool {
		st, err := js.Stream(ctxT(t), wire.StreamCancels)
		return err == nil && st.CachedInfo().State.Msgs == most
	})
}

// queued waits until the calls stream holds n calls.
func queued(t *testing.T, s *embedded.Server, n uint64) {
	t.Helper()
	js := natstest.JS(t, natstest.Connect(t, s))
	natstest.WaitFor(t, fmt.Sprint(n, " calls queued"), func() bool {
		st, err := js.Stream(ctxT(t), wire.StreamCalls)
		return err == nil && st.CachedInfo().State.Msgs == n
	})
}

// TestDurableCloseCancelNotRecorded: Close cancels the durable calls
// still waiting in the queue, but it published their records in the
// cancels stream without waiting for its answer, so when the stream was
// full Close returned nil, and a worker that took a call later ran it
// though its caller had closed the client. Close now says so: its error
// wraps ErrCancelNotRecorded, naming the call.
func TestDurableCloseCancelNotRecorded(t *testing.T) {
	s := natstest.Embedded(t, false)
	fullCancels(t, s)
	var ran atomic.Int32
	w, _ := durableWorker(t, s, effectKit(t, &ran), 0, "w0")
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	w.Stop(ctx) // the tool's consumer stays: its calls wait

	c, err := bus.NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *toolkit.Response, 1)
	go func() {
		done <- c.Invoke(context.Background(), toolkit.ToolCall{ID: "closed-1", Name: "effect", Durable: true})
	}()
	queued(t, s, 1)
	err = c.Close()
	if !errors.Is(err, bus.ErrCancelNotRecorded) || !strings.Contains(err.Error(), "closed-1") {
		t.Errorf("Close with a queued durable call whose cancel the full stream refused: %v, want ErrCancelNotRecorded naming the call", err)
	}
	select {
	case r := <-done:
		if r.Code != toolkit.CodeUnavailable {
			t.Errorf("the call at Close: %s %q, want unavailable", r.Code, r.Text())
		}
	case <-time.After(guard):
		t.Fatal("the call did not end at Close")
	}
}

// TestDurableUntakenCancelNotRecorded: a durable call left in the queue
// of a tool now served only without the durable path ends unavailable,
// and its cancel is recorded so that a durable worker back later does not
// run it; when the cancels stream refused the record, the final said
// nothing of it, and the call ran when a durable worker came back. The
// final now says that its cancel was not recorded, so it may still run.
func TestDurableUntakenCancelNotRecorded(t *testing.T) {
	s := natstest.Embedded(t, false)
	fullCancels(t, s)
	var ran atomic.Int32
	tk := effectKit(t, &ran)
	w, _ := durableWorker(t, s, tk, 0, "w0")
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	w.Stop(ctx)
	serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{Instance: "core"})

	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: 300 * time.Millisecond})
	r := invokeGuarded(t, c, toolkit.ToolCall{Name: "effect", Durable: true})
	if r.Code != toolkit.CodeUnavailable || !strings.Contains(r.Text(), "durable") {
		t.Fatalf("a durable call of a tool served now only without the durable path: %s %q, want unavailable", r.Code, r.Text())
	}
	if !strings.Contains(r.Text(), "the cancel was not recorded") || !strings.Contains(r.Text(), "later runs it") {
		t.Errorf("its final, its cancel's record refused: %q, want it to say the cancel was not recorded and the call may run", r.Text())
	}
}

// TestDurableStalledCancelNotRecorded: a durable call whose worker went
// silent on its last delivery, before its AckWait ran out, ends
// worker_lost and is cancelled, its record published without waiting;
// when the full cancels stream refused it, the final said nothing of it.
// The final still comes, and says that the cancel was not recorded.
func TestDurableStalledCancelNotRecorded(t *testing.T) {
	s := natstest.Embedded(t, false)
	fullCancels(t, s)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("hang", "Writes, then runs until its worker dies.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		if err := w.Write(toolkit.Text("begun")); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}))
	w, wnc := startDurableWorker(t, s, tk, bus.WorkerOptions{Instance: "doomed", Durable: &bus.DurableOptions{MaxDeliver: 1}}, time.Hour, false)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond, StallTimeout: 500 * time.Millisecond})
	done := make(chan *toolkit.Response, 1)
	heard := make(chan struct{})
	go func() {
		first := heard
		for ev := range c.Call(context.Background(), toolkit.ToolCall{Name: "hang", Durable: true}) {
			if ev.Chunk != nil && first != nil {
				close(first)
				first = nil
			}
			if ev.Final != nil {
				done <- ev.Final
			}
		}
	}()
	select {
	case <-heard:
	case r := <-done:
		t.Fatalf("the call ended before it ran: %s %q", r.Code, r.Text())
	case <-time.After(guard):
		t.Fatal("the call's output did not come")
	}
	killDurableWorker(w, wnc)
	select {
	case r := <-done:
		if r.Code != toolkit.CodeWorkerLost {
			t.Fatalf("the call whose worker went silent: %s %q, want worker_lost", r.Code, r.Text())
		}
		if !strings.Contains(r.Text(), "the cancel was not recorded") {
			t.Errorf("its final, its cancel's record refused: %q, want it to say the cancel was not recorded", r.Text())
		}
	case <-time.After(guard):
		t.Fatal("the stalled call's final did not come")
	}
}

// TestCancelRetriedQueuedNotRecorded: a call sent again after its first
// worker was lost runs under the id of its attempt; one its worker queued
// on the durable path (the tool's calls are durable by default) has its
// cancel recorded for a worker that takes it from the queue. Client.Cancel
// published that record without waiting for the cancels stream's answer,
// so when the full stream refused it Cancel returned nil. It returns
// ErrCancelNotRecorded, as for a durable call under the id given.
func TestCancelRetriedQueuedNotRecorded(t *testing.T) {
	s := natstest.Embedded(t, false)
	fullCancels(t, s)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Stream("wait", "Writes, then waits to be cancelled.", func(ctx context.Context, in struct{}, w toolkit.Writer) error {
		if err := w.Write(toolkit.Text("begun")); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}), toolkit.ReadOnly(), toolkit.Durable())

	// The first attempt goes to a worker that is gone at once; then the
	// real worker comes up, and queues the call sent again.
	hole(t, natstest.Connect(t, s), "wait", func() { durableWorker(t, s, tk, 0, "w") })
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 100 * time.Millisecond, StallTimeout: 2 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan *toolkit.Response, 1)
	heard := make(chan struct{})
	go func() {
		first := heard
		for ev := range c.Call(ctx, toolkit.ToolCall{ID: "job-1", Name: "wait"}) {
			if ev.Chunk != nil && len(ev.Chunk.Content) > 0 && ev.Chunk.Content[0].Text == "begun" && first != nil {
				close(first)
				first = nil
			}
			if ev.Final != nil {
				done <- ev.Final
			}
		}
	}()
	select {
	case <-heard:
	case r := <-done:
		t.Fatalf("the call ended before its attempt from the queue ran: %s %q", r.Code, r.Text())
	case <-time.After(guard):
		t.Fatal("the call's output did not come")
	}
	err := c.Cancel("job-1")
	if !errors.Is(err, bus.ErrCancelNotRecorded) || !strings.Contains(err.Error(), "job-1-r2") {
		t.Errorf("Cancel of a call whose queued attempt's cancel the full stream refused: %v, want ErrCancelNotRecorded naming the attempt", err)
	}
	select {
	case r := <-done:
		if r.Code != toolkit.CodeInterrupted {
			t.Errorf("the call after Cancel: %s %q, want interrupted", r.Code, r.Text())
		}
	case <-time.After(guard):
		t.Fatal("Cancel did not end the call")
	}
}
