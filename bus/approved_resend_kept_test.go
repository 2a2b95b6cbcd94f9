package bus_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestApprovedResendIgnoresStaleKept: a durable call ends
// approval_required (kept), is approved and sent again under the same
// id, and waits in the queue while no worker is up, its tool's consumer
// made again meanwhile (as one idle past ConsumerIdle is: a consumer
// older than the call that has not delivered it spares the call the
// read). The silent caller looks for the call's kept final: the
// approval_required kept from the first send is not this send's answer,
// so the caller goes on waiting and gets the approved run's result when
// a worker takes the call.
func TestApprovedResendIgnoresStaleKept(t *testing.T) {
	s := natstest.Embedded(t, false)
	var asks, runs atomic.Int32
	newTK := func() *toolkit.Toolkit {
		tk := toolkit.New(nil)
		// As the permission checks ask (a tool that answers so itself
		// ran: its id sent again is a duplicate).
		tk.Use(func(next toolkit.Handler) toolkit.Handler {
			return func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				if asks.Add(1) == 1 {
					return toolkit.NewError(toolkit.CodeApprovalRequired, "ApprovalRequiredError: approve first")
				}
				return next(ctx, call, w)
			}
		})
		mustAdd(t, tk, toolkit.Func("deploy", "Deploy.", func(ctx context.Context, in struct{}) (string, error) {
			runs.Add(1)
			return "deployed", nil
		}))
		return tk
	}
	w1, _ := keepingWorker(t, s, newTK(), bus.WorkerOptions{Instance: "w1"}, 0)
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond})
	call := toolkit.ToolCall{ID: "d1", Name: "deploy", Durable: true}
	if r := c.Invoke(ctxT(t), call); r.Code != toolkit.CodeApprovalRequired {
		t.Fatalf("first send: %s %q", r.Code, r.Text())
	}
	if r := c.Result(ctxT(t), "d1"); r.Code != toolkit.CodeApprovalRequired {
		t.Fatalf("kept: %s %q", r.Code, r.Text())
	}
	if err := w1.Stop(ctxT(t)); err != nil {
		t.Fatal(err)
	}

	// The caller's reads of kept results, counted.
	mon := natstest.Connect(t, s)
	var gets atomic.Int32
	for _, subj := range []string{"$JS.API.DIRECT.GET.KV_" + wire.BucketResults + ".>", "$JS.API.STREAM.MSG.GET.KV_" + wire.BucketResults} {
		if _, err := mon.Subscribe(subj, func(*nats.Msg) { gets.Add(1) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := mon.Flush(); err != nil {
		t.Fatal(err)
	}
	js := natstest.JS(t, mon)
	st, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), call) }() // after its approval
	natstest.WaitFor(t, "the re-sent call to be queued", func() bool {
		info, err := st.Info(ctxT(t))
		return err == nil && info.State.Msgs == 1
	})
	remakeConsumer(t, st, "deploy")
	// The caller falls silent and looks for a kept final.
	before := gets.Load()
	natstest.WaitFor(t, "the silent caller to look for its kept final", func() bool {
		return gets.Load() > before || len(done) > 0
	})
	keepingWorker(t, s, newTK(), bus.WorkerOptions{Instance: "w2"}, 0)
	r := <-done
	if r.State != toolkit.StateSuccess || r.Text() != "deployed" {
		t.Fatalf("the approved call re-sent ended %s %q for its caller (runs %d)", r.Code, r.Text(), runs.Load())
	}
	natstest.WaitFor(t, "the approved call to run", func() bool { return runs.Load() == 1 })
}
