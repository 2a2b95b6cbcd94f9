package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestStopWaitsForDurableRelease: a durable call whose final went out
// just before its worker's stop found nothing running is acknowledged
// before the stop returns: the stop waits for its final to be kept and
// the call acknowledged, rather than ending the bucket's answers first
// and leaving the call to be delivered again.
func TestStopWaitsForDurableRelease(t *testing.T) {
	s := natstest.Embedded(t, false)
	nc := natstest.Connect(t, s)
	js := natstest.JS(t, nc)
	tk := toolkit.New(nil)
	if err := tk.Add(toolkit.Func("put", "Store a value.", func(ctx context.Context, in struct{}) (string, error) {
		return "stored", nil
	})); err != nil {
		t.Fatal(err)
	}
	w, err := Serve(nc, tk, &WorkerOptions{Instance: "w1", Durable: &DurableOptions{JetStream: js}, Results: &ResultsOptions{JetStream: js}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := natstest.Ctx(t)
	c, err := NewClient(natstest.Connect(t, s), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	stopped := make(chan struct{})
	var stopOnce sync.Once
	stop := func() { stopOnce.Do(func() { w.Stop(context.Background()); close(stopped) }) }
	t.Cleanup(stop)
	reached := make(chan struct{})
	var once sync.Once
	// Set before any call runs (a call's runner reads it after its
	// final, as its caller goes on), for p1 alone.
	w.beforeRelease = func(s *sender) {
		if s.id != "p1" {
			return
		}
		once.Do(func() {
			close(reached)
			// The stop goes on meanwhile; it should wait for this call.
			select {
			case <-stopped:
			case <-time.After(2 * time.Second):
			}
		})
	}
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "p0", Name: "put", Durable: true}); r.Text() != "stored" {
		t.Fatalf("the first call: %s %q", r.Code, r.Text())
	}
	if r := c.Invoke(ctx, toolkit.ToolCall{ID: "p1", Name: "put", Durable: true}); r.Text() != "stored" {
		t.Fatalf("the call: %s %q", r.Code, r.Text())
	}
	<-reached
	go stop()
	<-stopped
	cons, err := w.dur.consumer(ctx, "put")
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call to be acknowledged", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.AckFloor.Consumer >= 2
	})
}
