package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableCancelWhileQueued: a durable call cancelled while it waits
// in the queue does not run when a worker takes it later, also a worker
// that did not hear the cancel (none was up) or heard it longer ago than
// its tombstones last (a backlog); it is answered interrupted, and that
// is its kept result. Before the cancels stream, both ran the tool after
// their callers were told "interrupted".
func TestDurableCancelWhileQueued(t *testing.T) {
	kit := func(ran *atomic.Int32, release <-chan struct{}) *toolkit.Toolkit {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Func("effect", "Has an effect.", func(ctx context.Context, in struct{}) (string, error) {
			ran.Add(1)
			if release != nil {
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return "done", nil
		}))
		return tk
	}
	cancelQueued := func(t *testing.T, c *bus.Client, id string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		if r := c.Invoke(ctx, toolkit.ToolCall{ID: id, Name: "effect", Durable: true}); r.Code != toolkit.CodeInterrupted {
			t.Fatalf("cancelled while queued: %+v", r)
		}
	}
	kept := func(t *testing.T, c *bus.Client, id string) {
		t.Helper()
		natstest.WaitFor(t, "the kept final", func() bool { return c.Result(ctxT(t), id).Code != toolkit.CodeNotFound })
		if r := c.Result(ctxT(t), id); r.Code != toolkit.CodeInterrupted {
			t.Fatalf("kept result: %+v", r)
		}
	}

	t.Run("no worker up", func(t *testing.T) {
		s := natstest.Embedded(t, false)
		var ran atomic.Int32
		// A worker made the streams and left.
		w, _ := startDurableWorker(t, s, kit(&ran, nil), bus.WorkerOptions{Instance: "w0"}, 0, true)
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		w.Stop(ctx)
		c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{CancelGrace: 100 * time.Millisecond})
		cancelQueued(t, c, "queued-1")
		startDurableWorker(t, s, kit(&ran, nil), bus.WorkerOptions{Instance: "w1"}, 0, true)
		kept(t, c, "queued-1")
		if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "effect", Durable: true}); r.Text() != "done" {
			t.Fatalf("a call after: %+v", r)
		}
		if n := ran.Load(); n != 1 {
			t.Fatalf("the tool ran %d times, want once (only the call not cancelled)", n)
		}
	})

	t.Run("cancelled by id from another client", func(t *testing.T) {
		// toolctl cancel CALL-ID: the client that cancels is not the one
		// waiting for the call, and cannot know it is durable.
		s := natstest.Embedded(t, false)
		var ran atomic.Int32
		w, _ := startDurableWorker(t, s, kit(&ran, nil), bus.WorkerOptions{Instance: "w0"}, 0, true)
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		w.Stop(ctx)
		c := newClient(t, natstest.Connect(t, s), nil)
		done := make(chan *toolkit.Response, 1)
		go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "queued-3", Name: "effect", Durable: true}) }()
		natstest.WaitFor(t, "the call queued", func() bool {
			info, err := natstest.JS(t, natstest.Connect(t, s)).Stream(ctxT(t), "toolbus_calls")
			return err == nil && info.CachedInfo().State.Msgs == 1
		})
		other := newClient(t, natstest.Connect(t, s), nil)
		if err := other.Cancel("queued-3"); err != nil {
			t.Fatal(err)
		}
		natstest.WaitFor(t, "the cancel recorded", func() bool {
			info, err := natstest.JS(t, natstest.Connect(t, s)).Stream(ctxT(t), "toolbus_cancels")
			return err == nil && info.CachedInfo().State.Msgs == 1
		})
		startDurableWorker(t, s, kit(&ran, nil), bus.WorkerOptions{Instance: "w1"}, 0, true)
		if r := <-done; r.Code != toolkit.CodeInterrupted {
			t.Fatalf("the call cancelled while queued: %+v", r)
		}
		if n := ran.Load(); n != 0 {
			t.Fatalf("the tool ran %d times, want none", n)
		}
	})

	t.Run("backlog", func(t *testing.T) {
		s := natstest.Embedded(t, false)
		var ran atomic.Int32
		release := make(chan struct{})
		startDurableWorker(t, s, kit(&ran, release), bus.WorkerOptions{Instance: "w1", MaxInFlight: 1, TombstoneTTL: 200 * time.Millisecond}, 0, true)
		c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{CancelGrace: 100 * time.Millisecond})
		busy := make(chan *toolkit.Response, 1)
		go func() { busy <- c.Invoke(ctxT(t), toolkit.ToolCall{ID: "busy", Name: "effect", Durable: true}) }()
		natstest.WaitFor(t, "the first call running", func() bool { return ran.Load() == 1 })
		cancelQueued(t, c, "queued-2")
		time.Sleep(500 * time.Millisecond) // the worker's tombstone is gone
		close(release)
		if r := <-busy; r.Text() != "done" {
			t.Fatalf("the first call: %+v", r)
		}
		kept(t, c, "queued-2")
		if n := ran.Load(); n != 1 {
			t.Fatalf("the tool ran %d times, want once (only the call not cancelled)", n)
		}
	})
}
