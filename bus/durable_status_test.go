package bus_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/toolbus/toolbus/bus/wire"
	"github.com/toolbus/toolbus/internal/natstest"
	"github.com/toolbus/toolbus/toolkit"
)

// TestDurableStoredStatus: a message stored on a durable subject with no
// body and a Status header (a caller's own publish, or the server's
// 404 or 503 answer to a request whose reply subject named the durable
// subject) looks, once the consumer delivers it, like the status a pull
// ends with. It must not end the pull it came in: the calls delivered
// after it in the same pull run now, not after AckWait (an hour here).
func TestDurableStoredStatus(t *testing.T) {
	s := natstest.Embedded(t, false)
	tk := toolkit.New(nil)
	mustAdd(t, tk, echoTool())
	w, wnc := durableWorker(t, s, tk, time.Hour, "w1")
	c := newClient(t, natstest.Connect(t, s), nil)
	if r := c.Invoke(ctxT(t), toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": "first"}}); r.Text() != "first" {
		t.Fatalf("the first durable call: %+v", r)
	}
	nc := natstest.Connect(t, s)
	// The first call's acknowledgement follows its final: killed before
	// it, the worker would leave the call in the stream for AckWait.
	natstest.WaitFor(t, "the first call acknowledged", func() bool {
		st, err := natstest.JS(t, nc).Stream(ctxT(t), wire.StreamCalls)
		if err != nil {
			return false
		}
		info, err := st.Info(ctxT(t))
		return err == nil && info.State.Msgs == 0
	})
	killDurableWorker(w, wnc) // the stream and the consumer stay

	// Until the server has ended the killed worker's pull requests, it may
	// deliver what comes next to them, for nobody: such a message waits
	// out the AckWait of an hour.
	natstest.WaitFor(t, "the killed worker's pulls to end", func() bool {
		cons, err := natstest.JS(t, nc).Consumer(ctxT(t), wire.StreamCalls, "echo")
		return err == nil && cons.CachedInfo().NumWaiting == 0
	})
	for _, status := range []string{"404", "408", "409", "503", "100"} {
		m := nats.NewMsg(wire.DurableSubject("echo", "mallory"))
		m.Header.Set("Status", status)
		m.Header.Set("Description", "No Messages")
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	// And the server's own answers stored there: a direct get of a
	// message that is not there (404), a request nobody serves (503).
	for _, subj := range []string{"$JS.API.DIRECT.GET." + wire.StreamCalls + ".nothing.here", "nobody.serves.this"} {
		if err := nc.PublishRequest(subj, wire.DurableSubject("echo", "mallory"), nil); err != nil {
			t.Fatal(err)
		}
	}
	nc.Flush()

	// Calls queued behind them, then a worker to pull them all at once.
	ctx, cancel := context.WithTimeout(ctxT(t), guard)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			text := fmt.Sprint("after-", i)
			if r := c.Invoke(ctx, toolkit.ToolCall{Name: "echo", Durable: true, Input: map[string]any{"text": text}}); r.Text() != text {
				t.Errorf("call %d: %s %q", i, r.Code, r.Text())
			}
		})
	}
	natstest.WaitFor(t, "the calls queued", func() bool {
		st, err := natstest.JS(t, nc).Stream(ctx, wire.StreamCalls)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs >= 13
	})
	durableWorker(t, s, tk, time.Hour, "w2")
	wg.Wait()
	// The look-alikes were ended in the stream, not left to come again.
	natstest.WaitFor(t, "the calls stream empty", func() bool {
		st, err := natstest.JS(t, nc).Stream(ctx, wire.StreamCalls)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs == 0
	})
}
