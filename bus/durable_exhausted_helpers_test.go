package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/embedded"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// exhaustedFleet is a server whose durable workers deliver each call
// once (MaxDeliver 1): a call whose worker dies has its deliveries run
// out ackWait later, and only the fleet's answer to the exhausted call
// can end it.
type exhaustedFleet struct {
	t       *testing.T
	s       *embedded.Server
	started chan struct{} // a call of a hanging worker's tool began
}

// lastDeliveryAckWait is the exhausted fleet's AckWait.
const lastDeliveryAckWait = 2 * time.Second

func newExhaustedFleet(t *testing.T) *exhaustedFleet {
	return &exhaustedFleet{t: t, s: natstest.Embedded(t, false), started: make(chan struct{}, 4)}
}

// worker starts a durable worker of tool, with kept results, whose tool
// answers "done", or with hang runs until its worker dies. It returns
// once a worker takes from the exhausted stream, which each binds in the
// background.
func (f *exhaustedFleet) worker(instance, tool string, hang bool) (*bus.Worker, *nats.Conn) {
	f.t.Helper()
	tk := toolkit.New(nil)
	mustAdd(f.t, tk, toolkit.Raw(tool, "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
		func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
			if hang {
				f.started <- struct{}{}
				<-ctx.Done() // the worker dies meanwhile
				return ctx.Err()
			}
			return w.Write(toolkit.Text("done"))
		}))
	w, nc := startDurableWorker(f.t, f.s, tk, bus.WorkerOptions{Instance: instance, Durable: &bus.DurableOptions{MaxDeliver: 1}}, lastDeliveryAckWait, true)
	js := natstest.JS(f.t, nc)
	natstest.WaitFor(f.t, "a worker taking from the exhausted stream", func() bool {
		c, err := js.Consumer(ctxT(f.t), wire.StreamExhausted, "toolbus-exhausted")
		return err == nil && c.CachedInfo().NumWaiting > 0
	})
	return w, nc
}

// client is a caller whose stall timeout is longer than the test: only
// the fleet's answer ends an exhausted call.
func (f *exhaustedFleet) client() *bus.Client {
	f.t.Helper()
	return newClient(f.t, natstest.Connect(f.t, f.s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond, StallTimeout: time.Hour})
}

// lose calls tool durably as id through c, on a worker "doomed" started
// for it whose tool hangs, and kills that worker once the call runs: the
// call's only delivery is lost. The call's response comes on the channel.
func (f *exhaustedFleet) lose(c *bus.Client, tool, id string) <-chan *toolkit.Response {
	f.t.Helper()
	w, wnc := f.worker("doomed", tool, true)
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(f.t), toolkit.ToolCall{ID: id, Name: tool, Durable: true}) }()
	select {
	case <-f.started:
	case r := <-done:
		f.t.Fatalf("the call ended before it started: %+v", r)
	}
	killDurableWorker(w, wnc)
	return done
}

// answered waits at most wait for the lost call's response, which must
// be worker_lost from the worker by is.
func (f *exhaustedFleet) answered(done <-chan *toolkit.Response, by string, wait time.Duration, what string) {
	f.t.Helper()
	var r *toolkit.Response
	select {
	case r = <-done:
	case <-time.After(wait):
		f.t.Fatalf("%s: no answer", what)
	}
	if r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaWorker] != by {
		f.t.Fatalf("%s: %+v", what, r)
	}
}
