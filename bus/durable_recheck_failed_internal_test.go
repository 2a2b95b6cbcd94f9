package bus

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableRecheckAfterFailedLookup: a durable call runs on a worker
// cut off from NATS, and its caller cancels it meanwhile. A lookup of the
// cancels stream failed just before the worker was back (one on its way
// as the connection went), so the lookups after the reconnect are put off
// for cancelsPause: the running calls' cancels are still looked up once
// the pause is over, not taken for looked up, the call then left to run
// to its end.
func TestDurableRecheckAfterFailedLookup(t *testing.T) {
	s := natstest.Embedded(t, true)
	u, err := url.Parse(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
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
	px := natstest.NewProxy(t, u.Host)
	wnc, err := nats.Connect(px.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wnc.Close)
	wjs := natstest.JS(t, wnc)
	w, err := Serve(wnc, tk, &WorkerOptions{Instance: "w1",
		Durable: &DurableOptions{JetStream: wjs}, Results: &ResultsOptions{JetStream: wjs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		w.Stop(ctx)
	})

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
	// A lookup that failed as the connection went.
	w.dur.cancelsFailed.Store(time.Now().UnixNano())

	px.Restore()
	select {
	case err := <-stopped:
		if err == nil {
			t.Fatal("the tool ran to its end after its call was cancelled")
		}
	case <-time.After(cancelsPause + 45*time.Second):
		t.Fatalf("the tool was not cancelled %v after its worker reconnected", cancelsPause+45*time.Second)
	}
}
