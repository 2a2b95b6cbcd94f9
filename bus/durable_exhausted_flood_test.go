package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableExhaustedFloodAnswered: NATS does not check a request's
// reply subject, so a caller of the fleet's roles can have the server
// publish its answers (here to $JS.API.INFO) on the calls stream's
// max-deliveries advisory subject, which the exhausted stream keeps, the
// oldest dropped first. Such a flood pushed out a real advisory: the
// call whose deliveries ran out was answered by no worker, no final was
// kept for it, and it stayed in the calls stream. A worker that takes a
// message there that is no advisory now looks for such calls itself, in
// the calls stream below its tools' consumers' ack floors, and answers
// them as an advisory's.
func TestDurableExhaustedFloodAnswered(t *testing.T) {
	conn := fleetRoles(t, nil, "alice", "bob")
	// The exhausted stream made small beforehand (an operator's bounds),
	// so that a short flood fills it.
	ex := bus.ExhaustedStreamConfig(1)
	ex.MaxMsgs = 64
	wjs := natstest.JS(t, conn(""))
	if _, err := wjs.CreateStream(ctxT(t), ex); err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	worker := func(instance string, hang bool) (*bus.Worker, *nats.Conn) {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw("put", "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				if hang {
					started <- struct{}{}
					<-ctx.Done() // the worker dies meanwhile
					return ctx.Err()
				}
				return w.Write(toolkit.Text("done"))
			}))
		nc := conn("")
		js := natstest.JS(t, nc)
		w := serve(t, nc, tk, &bus.WorkerOptions{Instance: instance, AnnounceInterval: -1,
			Durable: &bus.DurableOptions{JetStream: js, MaxDeliver: 1, AckWait: lastDeliveryAckWait}, Results: &bus.ResultsOptions{JetStream: js}})
		return w, nc
	}

	bob := newClient(t, conn("bob"), &bus.ClientOptions{Identity: "bob", Heartbeat: 50 * time.Millisecond, StallTimeout: time.Hour})
	w, wnc := worker("doomed", true)
	go bob.Invoke(ctxT(t), toolkit.ToolCall{ID: "lost-1", Name: "put", Durable: true})
	select {
	case <-started:
	case <-time.After(guard):
		t.Fatal("the call did not start")
	}
	killDurableWorker(w, wnc)
	exhausted, err := wjs.Stream(ctxT(t), wire.StreamExhausted)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call's advisory kept", func() bool {
		info, err := exhausted.Info(ctxT(t))
		return err == nil && info.State.Msgs == 1
	})

	// alice's answers from the server, sent on the advisory subject.
	alice := conn("alice")
	subject := "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + wire.StreamCalls + ".put"
	for i := range 2 * ex.MaxMsgs {
		if err := alice.PublishRequest("$JS.API.INFO", subject, nil); err != nil {
			t.Fatal(err)
		}
		if i%16 == 0 {
			if err := alice.FlushTimeout(guard); err != nil {
				t.Fatal(err)
			}
		}
	}
	natstest.WaitFor(t, "the real advisory pushed out", func() bool {
		info, err := exhausted.Info(ctxT(t))
		return err == nil && info.State.FirstSeq > 1 && info.State.Msgs == uint64(ex.MaxMsgs)
	})

	worker("survivor", false)
	natstest.WaitFor(t, "the exhausted call's kept final", func() bool {
		return bob.Result(ctxT(t), "lost-1").Code != toolkit.CodeNotFound
	})
	if r := bob.Result(ctxT(t), "lost-1"); r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaWorker] != "survivor" {
		t.Fatalf("the exhausted call's kept final: %+v", r)
	}
	calls, err := wjs.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the exhausted call removed", func() bool {
		info, err := calls.Info(ctxT(t))
		return err == nil && info.State.Msgs == 0
	})
}
