package bus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolbus/toolbus/bus"
	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableCallRemovedFromQueue: a durable call waiting in the calls
// stream, no worker having taken it yet, that is removed from the stream
// (its message deleted, or the stream purged) will never be delivered.
// Its caller waited on, looking again ever less often, until its own
// deadline, forever without one, though the queue was served and done
// with the call. The client now ends it when it finds the consumer past
// the call's message, or with nothing to deliver nor awaiting an
// acknowledgement: worker_lost, saying the call is no longer in the
// stream and may have been removed or its frames lost.
func TestDurableCallRemovedFromQueue(t *testing.T) {
	for _, how := range []string{"deleted", "purged"} {
		t.Run(how, func(t *testing.T) {
			s := natstest.Embedded(t, false)
			tk := toolkit.New(nil)
			mustAdd(t, tk, echoTool())
			w1, _ := durableWorker(t, s, tk, 0, "w1")
			if err := w1.Stop(ctxT(t)); err != nil {
				t.Fatal(err)
			}
			c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{StallTimeout: 300 * time.Millisecond})
			done := make(chan *toolkit.Response, 1)
			go func() {
				done <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "hi"}})
			}()
			js := natstest.JS(t, natstest.Connect(t, s))
			stream, err := js.Stream(ctxT(t), wire.StreamCalls)
			if err != nil {
				t.Fatal(err)
			}
			var seq uint64
			natstest.WaitFor(t, "the call queued", func() bool {
				info, err := stream.Info(ctxT(t))
				seq = info.State.LastSeq
				return err == nil && info.State.Msgs == 1
			})
			if how == "deleted" {
				err = stream.DeleteMsg(ctxT(t), seq)
			} else {
				err = stream.Purge(ctxT(t), jetstream.WithPurgeSubject(wire.DurableSubject("echo", "")))
			}
			if err != nil {
				t.Fatal(err)
			}
			durableWorker(t, s, tk, 0, "w2")
			var r *toolkit.Response
			select {
			case r = <-done:
			case <-time.After(guard):
				t.Fatalf("a durable call %s from the queue before any worker took it: no final after %v", how, guard)
			}
			if r.Code != toolkit.CodeWorkerLost || !strings.Contains(r.Text(), "no longer in the calls stream") {
				t.Fatalf("a durable call %s from the queue before any worker took it: %s %s %q", how, r.State, r.Code, r.Text())
			}
		})
	}
}

// TestDurableCallRemovedWhileRunning: a durable call whose message is
// deleted from the calls stream while its worker runs it still ends with
// its tool's answer, and the worker serves on.
func TestDurableCallRemovedWhileRunning(t *testing.T) {
	s := natstest.Embedded(t, false)
	started, release := make(chan struct{}, 1), make(chan struct{})
	tk := toolkit.New(nil)
	mustAdd(t, tk, toolkit.Func("hold", "Waits to be released.", func(ctx context.Context, in struct{}) (string, error) {
		started <- struct{}{}
		select {
		case <-release:
			return "released", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}))
	mustAdd(t, tk, echoTool())
	w, _ := durableWorker(t, s, tk, 0, "w1")
	c := newClient(t, natstest.Connect(t, s), &bus.ClientOptions{Heartbeat: 50 * time.Millisecond, StallTimeout: 300 * time.Millisecond})
	done := make(chan *toolkit.Response, 1)
	go func() { done <- c.Invoke(ctxT(t), toolkit.ToolCall{Name: "hold", Durable: true}) }()
	<-started
	js := natstest.JS(t, natstest.Connect(t, s))
	stream, err := js.Stream(ctxT(t), wire.StreamCalls)
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.DeleteMsg(ctxT(t), info.State.LastSeq); err != nil {
		t.Fatal(err)
	}
	// Past the client's stall timeout: heartbeats keep it waiting.
	beats := w.Counters().Frames[wire.KindHeartbeat]
	natstest.WaitFor(t, "heartbeats after the deletion", func() bool { return w.Counters().Frames[wire.KindHeartbeat] >= beats+10 })
	close(release)
	if r := <-done; r.Text() != "released" {
		t.Fatalf("a durable call deleted from the stream while it ran: %s %s %q", r.State, r.Code, r.Text())
	}
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "after"}}); r.Text() != "after" {
		t.Fatalf("a call after: %+v", r)
	}
}
