package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// Client.Cancel(id) is how a caller cancels its call. When the client had
// sent the call again (its first worker was lost), the attempt running
// has the id id-r2; the cancel went to tools.cancel.<id> only, the worker
// running id-r2 never heard of it, and the call ran on to its end.
func TestCancelReachesRetriedCall(t *testing.T) {
	s := natstest.Embedded(t, false)
	started := make(chan string, 1)
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Raw("wait", "Waits to be cancelled.", map[string]any{"type": "object", "properties": map[string]any{}}, func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
		started <- call.ID
		<-ctx.Done() // only a cancel ends it (or the worker's stop when the test ends)
		return ctx.Err()
	}), toolkit.ReadOnly())

	// The first attempt goes to a worker that is gone at once; then the
	// real worker comes up.
	hole(t, natstest.Connect(t, s), "wait", func() { serve(t, natstest.Connect(t, s), tk, nil) })
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: bus.MinHeartbeat})
	// The call's context has no deadline: only the cancel can end it.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctx, toolkit.ToolCall{ID: "job-1", Name: "wait"}) }()
	id := <-started
	t.Logf("running attempt %s", id)
	if err := c.Cancel("job-1"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Code != toolkit.CodeInterrupted || r.ID != "job-1" {
			t.Fatalf("final %s %s %q after Cancel(job-1), want interrupted", r.ID, r.Code, r.Text())
		}
	case <-time.After(guard):
		t.Fatalf("Cancel(job-1) did not end the call within %v: the running attempt %s was not cancelled", guard, id)
	}
}
