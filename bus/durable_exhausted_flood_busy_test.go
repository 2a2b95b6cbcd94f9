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

// TestDurableExhaustedFloodAnsweredWhenBusy: a worker that takes a
// message in the exhausted stream that is no advisory looks for its
// tools' exhausted calls in the calls stream, but only for a tool none of
// whose calls awaits an acknowledgement. It skipped a tool with a call in
// progress at the look and never looked at it again once the flood had
// stopped, so the exhausted call the flood hid stayed in the calls stream
// unanswered for good. It now looks at such a tool again, each second,
// until none of its calls is in progress.
func TestDurableExhaustedFloodAnsweredWhenBusy(t *testing.T) {
	conn := fleetRoles(t, nil, "alice", "bob")
	ex := bus.ExhaustedStreamConfig(1)
	ex.MaxMsgs = 64
	wjs := natstest.JS(t, conn(""))
	if _, err := wjs.CreateStream(ctxT(t), ex); err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 2)
	release := make(chan struct{})
	worker := func(instance string, hang bool) (*bus.Worker, *nats.Conn) {
		tk := toolkit.New(nil)
		mustAdd(t, tk, toolkit.Raw("put", "A tool.", map[string]any{"type": "object", "properties": map[string]any{}},
			func(ctx context.Context, call *toolkit.Call, w toolkit.Writer) error {
				started <- call.ID
				if hang {
					<-ctx.Done() // the worker dies meanwhile
					return ctx.Err()
				}
				if call.ID == "slow-1" {
					select {
					case <-release:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return w.Write(toolkit.Text("done"))
			}))
		nc := conn("")
		js := natstest.JS(t, nc)
		w := serve(t, nc, tk, &bus.WorkerOptions{Instance: instance, AnnounceInterval: -1,
			Durable: &bus.DurableOptions{JetStream: js, MaxDeliver: 1, AckWait: lastDeliveryAckWait}, Results: &bus.ResultsOptions{JetStream: js}})
		return w, nc
	}
	waitStarted := func(id string) {
		t.Helper()
		select {
		case got := <-started:
			if got != id {
				t.Fatalf("started %s, want %s", got, id)
			}
		case <-time.After(guard):
			t.Fatalf("%s did not start", id)
		}
	}

	bob := newClient(t, conn("bob"), &bus.ClientOptions{Identity: "bob", Heartbeat: 50 * time.Millisecond, StallTimeout: time.Hour})
	w, wnc := worker("doomed", true)
	go bob.Invoke(ctxT(t), toolkit.ToolCall{ID: "lost-1", Name: "put", Durable: true})
	waitStarted("lost-1")
	killDurableWorker(w, wnc)
	exhausted, err := wjs.Stream(ctxT(t), wire.StreamExhausted)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the call's advisory kept", func() bool {
		info, err := exhausted.Info(ctxT(t))
		return err == nil && info.State.Msgs == 1
	})

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

	// A call of the tool waits in the queue: the next worker runs it
	// while it looks for the exhausted calls.
	slow := make(chan *toolkit.Response, 1)
	go func() { slow <- bob.Invoke(ctxT(t), toolkit.ToolCall{ID: "slow-1", Name: "put", Durable: true}) }()
	calls, err := wjs.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	natstest.WaitFor(t, "the slow call queued", func() bool {
		info, err := calls.Info(ctxT(t))
		return err == nil && info.State.Msgs == 2
	})
	worker("survivor", false)
	waitStarted("slow-1")
	natstest.WaitFor(t, "the flood taken", func() bool {
		info, err := exhausted.Info(ctxT(t))
		return err == nil && info.State.Msgs == 0
	})
	// The looks while the flood is taken find the tool busy; let them end.
	time.Sleep(3 * time.Second)
	close(release)
	if r := <-slow; r.State != toolkit.StateSuccess {
		t.Fatalf("the slow call: %+v", r)
	}
	natstest.WaitFor(t, "the exhausted call's kept final", func() bool {
		return bob.Result(ctxT(t), "lost-1").Code != toolkit.CodeNotFound
	})
	if r := bob.Result(ctxT(t), "lost-1"); r.Code != toolkit.CodeWorkerLost || r.Metadata[wire.MetaWorker] != "survivor" {
		t.Fatalf("the exhausted call's kept final: %+v", r)
	}
	natstest.WaitFor(t, "the exhausted call removed", func() bool {
		info, err := calls.Info(ctxT(t))
		return err == nil && info.State.Msgs == 0
	})
}
