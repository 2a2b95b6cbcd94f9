package bus

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableCancelOfRunningCallWhileCutOff: a durable call runs on a
// worker that is then cut off from NATS; its caller cancels it meanwhile
// (the cancel is recorded in the cancels stream, and goes by the worker
// unheard). Back, the worker ran the call on to its end, its caller long
// told "interrupted": it looks up the cancels of the durable calls it
// runs once it has reconnected, and cancels them; the final kept says so.
func TestDurableCancelOfRunningCallWhileCutOff(t *testing.T) {
	c := cancelledWhileCutOff(t, 30*time.Second, nil)
	natstest.WaitFor(t, "the kept final", func() bool { return c.Result(natstest.Ctx(t), "mig1").Code != toolkit.CodeNotFound })
	if r := c.Result(natstest.Ctx(t), "mig1"); r.Code != toolkit.CodeInterrupted {
		t.Fatalf("kept result: %s %q, want interrupted", r.Code, r.Text())
	}
}

// TestDurableRecheckAfterFailedLookup: as above, but a lookup of the
// cancels stream failed just before the worker was back (one on its way
// as the connection went), so the lookups after the reconnect are put off
// for cancelsPause: the running calls' cancels are still looked up once
// the pause is over, not taken for looked up, the call then left to run
// to its end.
func TestDurableRecheckAfterFailedLookup(t *testing.T) {
	cancelledWhileCutOff(t, cancelsPause+45*time.Second, func(w *Worker) {
		// A lookup that failed as the connection went.
		w.dur.cancelsFailed.Store(time.Now().UnixNano())
	})
}

// cancelledWhileCutOff runs a durable call (id mig1) whose tool runs until
// cancelled on a worker, cuts the worker off, cancels the call, calls
// beforeRestore (unless nil), restores the worker's connection and waits
// up to wait for the tool to see its cancel. It returns the caller's
// client.
func cancelledWhileCutOff(t *testing.T, wait time.Duration, beforeRestore func(*Worker)) *Client {
	s := natstest.Embedded(t, true)
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	tk := toolkit.New(nil)
	mustAddT(t, tk, toolkit.Func("migrate", "Migrates a database.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-ctx.Done():
			stopped <- context.Cause(ctx)
			return "", ctx.Err()
		case <-time.After(2 * time.Minute):
			stopped <- nil
			return "migrated", nil
		}
	}))
	px := natstest.ProxyTo(t, s)
	wnc := px.Conn(t)
	wjs := natstest.JS(t, wnc)
	w := serve(t, wnc, tk, &WorkerOptions{Instance: "w1",
		Durable: &DurableOptions{JetStream: wjs}, Results: &ResultsOptions{JetStream: wjs}})

	c, err := NewClient(natstest.Connect(t, s), &ClientOptions{CancelGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	js := natstest.JS(t, natstest.Connect(t, s))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{ID: "mig1", Name: "migrate", Durable: true}) }()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not start")
	}

	px.Cut()
	natstest.WaitFor(t, "the worker to be cut off", func() bool { return !wnc.IsConnected() })
	cancel()
	if r := <-done; r.Code != toolkit.CodeInterrupted {
		t.Fatalf("the call cancelled while its worker is cut off: %+v", r)
	}
	natstest.WaitFor(t, "the cancel recorded", func() bool {
		st, err := js.Stream(natstest.Ctx(t), "toolbus_cancels")
		return err == nil && st.CachedInfo().State.Msgs == 1
	})
	if beforeRestore != nil {
		beforeRestore(w)
	}

	px.Restore()
	select {
	case err := <-stopped:
		if err == nil {
			t.Fatal("the tool ran to its end after its call was cancelled")
		}
	case <-time.After(wait):
		t.Fatalf("the tool was not cancelled %v after its worker reconnected", wait)
	}
	return c
}
