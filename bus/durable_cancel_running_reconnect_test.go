package bus_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableCancelOfRunningCallWhileCutOff: a durable call runs on a
// worker that is then cut off from NATS; its caller cancels it meanwhile
// (the cancel is recorded in the cancels stream, and goes by the worker
// unheard). Back, the worker ran the call on to its end, its caller long
// told "interrupted": it looks up the cancels of the durable calls it
// runs once it has reconnected, and cancels them.
func TestDurableCancelOfRunningCallWhileCutOff(t *testing.T) {
	s := natstest.Embedded(t, true)
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	stopped := make(chan error, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("migrate", "Migrates a database.", func(ctx context.Context, in struct{}) (string, error) {
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
	px := natstest.NewProxy(t, u.Host)
	wnc, err := nats.Connect(px.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wnc.Close)
	wjs := natstest.JS(t, wnc)
	serve(t, wnc, tk, &bus.WorkerOptions{Instance: "w1",
		Durable: &bus.DurableOptions{JetStream: wjs}, Results: &bus.ResultsOptions{JetStream: wjs}})

	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{CancelGrace: 100 * time.Millisecond})
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
		st, err := js.Stream(ctxT(t), "toolbus_cancels")
		return err == nil && st.CachedInfo().State.Msgs == 1
	})

	px.Restore()
	select {
	case err := <-stopped:
		if err == nil {
			t.Fatal("the tool ran to its end after its call was cancelled")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the tool was not cancelled 30 s after its worker reconnected")
	}
	natstest.WaitFor(t, "the kept final", func() bool { return c.Result(ctxT(t), "mig1").Code != toolkit.CodeNotFound })
	if r := c.Result(ctxT(t), "mig1"); r.Code != toolkit.CodeInterrupted {
		t.Fatalf("kept result: %s %q, want interrupted", r.Code, r.Text())
	}
}
