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

// TestSecondStopWaits: a Stop called while another runs (a signal
// handler and a deferred Stop, say) returns once the first has, its
// calls' finals sent; it returned at once, and a program exiting then
// lost them.
func TestSecondStopWaits(t *testing.T) {
	s := natstest.Embedded(t, false)
	release := make(chan struct{})
	started := make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("hold", "Hold until released.", func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release
		return "done", nil
	}))
	var finals atomic.Int32
	w := serve(t, natstest.Connect(t, s), tk, &bus.WorkerOptions{OnFinal: func(string, toolkit.State, toolkit.Code, time.Duration) { finals.Add(1) }})
	c := newClient(t, natstest.Connect(t, s), nil)
	got := make(chan *toolkit.Response, 1)
	go func() { got <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hold"}) }()
	<-started
	first := make(chan error, 1)
	go func() { first <- w.Stop(ctxT(t)) }()
	natstest.WaitFor(t, "the first stop under way", func() bool { return w.Draining() })
	second := make(chan error, 1)
	go func() { second <- w.Stop(ctxT(t)) }()
	select {
	case err := <-second:
		t.Fatalf("the second Stop returned (%v) while the first waited for a running call", err)
	case <-time.After(200 * time.Millisecond): // a loaded machine may only miss the defect here
	}
	close(release)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if finals.Load() != 1 {
		t.Fatalf("the second Stop returned before the running call's final was sent (%d finals)", finals.Load())
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Text() != "done" {
		t.Fatalf("the running call: %+v", r)
	}
}
